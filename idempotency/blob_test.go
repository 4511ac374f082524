package idempotency_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
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
