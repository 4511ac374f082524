package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
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
