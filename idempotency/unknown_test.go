package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/memory"
)

// Every record the middleware settles unknown is told, once, to
// Options.OnUnknown as stored, and to ErrorLog with the agentctl command:
// a handler that panicked after its effect, and one whose response
// outgrew MaxResponseBytes. Retries, answered from the record, tell
// nothing new.
func TestOnUnknown(t *testing.T) {
	for _, tc := range []struct {
		name    string
		class   string
		handler func(l *ledger) http.HandlerFunc
	}{
		{"panic", idempotency.ClassPanic, func(l *ledger) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				l.add("")
				panic("card network timeout after the charge")
			}
		}},
		{"too-large", idempotency.ClassTooLarge, func(l *ledger) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				l.add("")
				fmt.Fprint(w, strings.Repeat("x", 2048))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var told []journal.Record
			var logged []string
			var l ledger
			store := openAt(t, t.TempDir()+"/server.journal")
			srv := chargeServer(t, store, &idempotency.Options{MaxResponseBytes: 1024,
				ErrorLog: func(format string, args ...any) {
					mu.Lock()
					defer mu.Unlock()
					logged = append(logged, fmt.Sprintf(format, args...))
				},
				OnUnknown: func(_ context.Context, rec journal.Record) {
					mu.Lock()
					defer mu.Unlock()
					told = append(told, rec)
				}}, &l, tc.handler(&l))
			for range 3 {
				post(t, srv.URL+"/v1/charges", "k-"+tc.name, `{}`)
			}
			mu.Lock()
			defer mu.Unlock()
			if l.count() != 1 || len(told) != 1 {
				t.Fatalf("effects %d, OnUnknown %d times; want 1 and 1", l.count(), len(told))
			}
			rec := told[0]
			if rec.State != journal.StateUnknown || rec.ErrorClass != tc.class || rec.Intent.Tool != "POST /v1/charges" || rec.Intent.Session != "k-"+tc.name {
				t.Errorf("OnUnknown record = %v %s %s %s; want unknown, %s, POST /v1/charges, k-%s",
					rec.State, rec.ErrorClass, rec.Intent.Tool, rec.Intent.Session, tc.class, tc.name)
			}
			if n := strings.Count(strings.Join(logged, "\n"), "agentctl resolve "+rec.Key.String()); n != 1 {
				t.Errorf("ErrorLog = %q; want one line with agentctl resolve %s", logged, rec.Key)
			}
		})
	}
}

// A server that stops mid-request (here: its lease runs out while its
// handler hangs) leaves a record the next server settles unknown: that
// server tells OnUnknown, once, and the handler ran once.
func TestOnUnknownAfterCrash(t *testing.T) {
	var skew atomic.Int64
	store := memory.New(&journal.Options{Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	var mu sync.Mutex
	var told []journal.Record
	var l ledger
	started, release := make(chan struct{}), make(chan struct{})
	opts := func(owner string) *idempotency.Options {
		return &idempotency.Options{Owner: owner, LeaseTTL: time.Hour, ErrorLog: func(string, ...any) {},
			OnUnknown: func(_ context.Context, rec journal.Record) {
				mu.Lock()
				defer mu.Unlock()
				told = append(told, rec)
			}}
	}
	hung := chargeServer(t, store, opts("hung"), &l, func(w http.ResponseWriter, r *http.Request) {
		l.add("")
		close(started)
		<-release
	})
	next := chargeServer(t, store, opts("next"), &l, nil)
	first := make(chan struct{})
	t.Cleanup(func() { // before the servers close: they wait for the handler
		close(release)
		<-first
	})
	go func() {
		defer close(first)
		req, _ := http.NewRequest(http.MethodPost, hung.URL+"/v1/charges", strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "kc")
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	skew.Store(int64(2 * time.Hour)) // the hung server's lease has run out
	st, _, b := post(t, next.URL+"/v1/charges", "kc", `{}`)
	if st != http.StatusInternalServerError || !strings.Contains(b, idempotency.ProblemOutcomeUnknown) {
		t.Fatalf("retry after the lease ran out = %d %s; want 500 outcome-unknown", st, b)
	}
	mu.Lock()
	defer mu.Unlock()
	if l.count() != 1 || len(told) != 1 || told[0].ErrorClass != idempotency.ClassCrashed || told[0].Intent.Session != "kc" {
		t.Errorf("effects %d, OnUnknown told %+v; want 1 effect, one record of class %q for kc", l.count(), told, idempotency.ClassCrashed)
	}
}
