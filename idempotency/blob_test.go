package idempotency_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentonce/agentonce/idempotency"
)

// A body over MaxStoredBytes goes to the blob store and is replayed from
// it byte for byte; without one the replay says the body is unavailable.
func TestLargeBody(t *testing.T) {
	store := openAt(t, t.TempDir()+"/blob.journal")
	big := strings.Repeat("0123456789", 10_000) // 100 kB, not JSON
	for _, blobs := range []idempotency.BlobStore{idempotency.DirBlobs{Dir: t.TempDir()}, nil} {
		var l ledger
		srv := chargeServer(t, store, &idempotency.Options{Blobs: blobs, MaxStoredBytes: 1024}, &l, func(w http.ResponseWriter, r *http.Request) {
			l.add("")
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, big)
		})
		key := fmt.Sprintf("big-%t", blobs != nil)
		if st, _, b := post(t, srv.URL+"/v1/charges", key, `{}`); st != 200 || b != big {
			t.Fatalf("first = %d (%d bytes); want 200 and the body", st, len(b))
		}
		st, _, b := post(t, srv.URL+"/v1/charges", key, `{}`)
		switch {
		case blobs != nil && (st != 200 || b != big):
			t.Errorf("replay from blobs = %d (%d bytes); want 200 and the same body", st, len(b))
		case blobs == nil && (st != 500 || !strings.Contains(b, idempotency.ProblemBodyUnavailable)):
			t.Errorf("replay without blobs = %d %s; want 500 stored-body-unavailable", st, b)
		}
		if l.count() != 1 {
			t.Errorf("effects = %d; want 1", l.count())
		}
	}
}

// With the defaults, a 1 MiB answer is kept in the record and replayed
// byte for byte; a larger one, with no blob store, reaches its first
// client, is logged (route and size) when it is recorded, and every retry
// gets 500 stored-body-unavailable. The handler runs once either way.
func TestLargeBodyDefaults(t *testing.T) {
	store := openAt(t, t.TempDir()+"/large.journal")
	var logged strings.Builder
	var mu sync.Mutex
	opts := &idempotency.Options{ErrorLog: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(&logged, format+"\n", args...)
	}}
	for _, size := range []int{1 << 20, 1<<20 + 1} {
		var l ledger
		body := strings.Repeat("x", size)
		srv := chargeServer(t, store, opts, &l, func(w http.ResponseWriter, r *http.Request) {
			l.add("")
			io.WriteString(w, body)
		})
		key := fmt.Sprint("large-", size)
		if st, _, b := post(t, srv.URL+"/v1/charges", key, `{}`); st != 200 || b != body {
			t.Fatalf("%d bytes: first = %d (%d bytes); want 200 and the body", size, st, len(b))
		}
		for range 2 {
			st, h, b := post(t, srv.URL+"/v1/charges", key, `{}`)
			switch {
			case size == 1<<20 && (st != 200 || b != body || h.Get("Idempotent-Replayed") != "true"):
				t.Errorf("%d bytes: retry = %d (%d bytes); want the 200 replayed byte for byte", size, st, len(b))
			case size > 1<<20 && (st != 500 || !strings.Contains(b, idempotency.ProblemBodyUnavailable)):
				t.Errorf("%d bytes: retry = %d %.200s; want 500 stored-body-unavailable", size, st, b)
			}
		}
		if l.count() != 1 {
			t.Errorf("%d bytes: handler runs = %d; want 1", size, l.count())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if got := logged.String(); strings.Count(got, "1048577 bytes") != 1 || !strings.Contains(got, "POST /v1/charges") {
		t.Errorf("ErrorLog = %q; want the record time's line naming the route and the size", got)
	}
}
