package idempotency_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
	jbolt "github.com/agentonce/agentonce/journal/bolt"
)

// boltCharges is the bucket the InTx handlers below write their charges
// to: a bucket of their own in the journal's file.
var boltCharges = []byte("charges")

// boltChargeHandler writes one charge row for the request's key through
// jbolt.TxFrom, then answers as status says (blocking first, when block is
// set, until the process is killed); calls counts its runs.
func boltChargeHandler(t testing.TB, calls *atomic.Int64, status func(n int64) int, block func()) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		tx, ok := jbolt.TxFrom(r.Context())
		if !ok {
			t.Error("no bbolt transaction in the handler's context")
			http.Error(w, "no transaction", 500)
			return
		}
		b, err := tx.CreateBucketIfNotExists(boltCharges)
		if err == nil {
			err = b.Put(fmt.Appendf(nil, "%s/%d", r.Header.Get("Idempotency-Key"), n), []byte(benchBody))
		}
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		if block != nil {
			block()
		}
		st := status(n)
		if st == 0 {
			panic("crash after the charge")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st)
		fmt.Fprintf(w, `{"id":"ch_%d"}`, n)
	}
}

// boltRows counts the charge rows of the client's key in store's file.
func boltRows(t testing.TB, store journal.Store, key string) int {
	t.Helper()
	n := 0
	err := store.(*jbolt.Store).View(context.Background(), func(tx *bbolt.Tx) error {
		b := tx.Bucket(boltCharges)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			if strings.HasPrefix(string(k), key+"/") {
				n++
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func inTxServer(t testing.TB, store journal.Store, h http.Handler) *httptest.Server {
	m, err := idempotency.New(store, &idempotency.Options{InTx: true, ErrorLog: func(string, ...any) {}})
	if err != nil {
		t.Fatalf("idempotency.New(InTx) on a bbolt journal = %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", m.Handler(h))
	srv := httptest.NewServer(mux)
	return srv
}

// On a bbolt journal with InTx the handler's row and the stored response
// commit together: a repeated key is replayed and writes no second row; a
// 5xx or a panic after the write leaves no row, and the next request with
// the key runs again, once.
func TestInTxBolt(t *testing.T) {
	store := openAt(t, filepath.Join(t.TempDir(), "server.journal"))
	var calls atomic.Int64
	statuses := map[int64]int{1: 201, 2: 503, 3: 0, 4: 201}
	srv := inTxServer(t, store, boltChargeHandler(t, &calls, func(n int64) int { return statuses[n] }, nil))
	defer srv.Close()

	st, hdr, body := post(t, srv.URL+"/v1/charges", "k-1", benchBody)
	if st != 201 || body != `{"id":"ch_1"}` {
		t.Fatalf("first request = %d %s; want 201 ch_1", st, body)
	}
	for range 2 {
		st, hdr, body = post(t, srv.URL+"/v1/charges", "k-1", benchBody)
		if st != 201 || body != `{"id":"ch_1"}` || hdr.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("repeat = %d %s (replayed %q); want the first answer replayed", st, body, hdr.Get("Idempotent-Replayed"))
		}
	}
	if n := boltRows(t, store, "k-1"); n != 1 || calls.Load() != 1 {
		t.Fatalf("k-1: rows = %d, handler calls = %d; want 1 and 1", n, calls.Load())
	}

	// 503 after the write: rolled back, nothing stored.
	if st, _, _ := post(t, srv.URL+"/v1/charges", "k-2", benchBody); st != 503 {
		t.Fatalf("k-2 first = %d; want the handler's 503", st)
	}
	if n := boltRows(t, store, "k-2"); n != 0 {
		t.Fatalf("k-2: rows after the 503 = %d; want 0 (rolled back)", n)
	}
	// A panic after the write: rolled back, the connection dropped. (On a
	// fresh connection, which net/http's client does not resend on.)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/charges", strings.NewReader(benchBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "k-2")
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := fresh.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("k-2 second = %d; want the connection dropped by the panic", resp.StatusCode)
	}
	if n := boltRows(t, store, "k-2"); n != 0 {
		t.Fatalf("k-2: rows after the panic = %d; want 0 (rolled back)", n)
	}
	if st, _, body := post(t, srv.URL+"/v1/charges", "k-2", benchBody); st != 201 || body != `{"id":"ch_4"}` {
		t.Fatalf("k-2 third = %d %s; want 201 ch_4 (run again)", st, body)
	}
	if n := boltRows(t, store, "k-2"); n != 1 {
		t.Fatalf("k-2: rows = %d; want 1", n)
	}
}

const inTxKillEnv = "AGENTONCE_IDEM_INTX_KILL_CHILD"

// TestInTxBoltKillChild serves one InTx request to itself and dies, by its
// parent's SIGKILL, in the middle of the handler, after its write.
func TestInTxBoltKillChild(t *testing.T) {
	path := os.Getenv(inTxKillEnv)
	if path == "" {
		t.Skip("helper process for TestInTxBoltKilled")
	}
	store := openAt(t, path)
	var calls atomic.Int64
	srv := inTxServer(t, store, boltChargeHandler(t, &calls, func(int64) int { return 201 }, func() {
		fmt.Println("in handler")
		select {}
	}))
	post(t, srv.URL+"/v1/charges", "k-kill", benchBody)
}

// A server killed in the middle of an InTx handler leaves no row: the
// retry, after the restart, takes the key over and runs the handler once.
func TestInTxBoltKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "server.journal")
	cmd := exec.Command(os.Args[0], "-test.run=^TestInTxBoltKillChild$")
	cmd.Env = append(os.Environ(), inTxKillEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if line != "in handler\n" {
		t.Fatalf("child said %q; want in handler", line)
	}

	store := openAt(t, path)
	if n := boltRows(t, store, "k-kill"); n != 0 {
		t.Fatalf("rows after the kill = %d; want 0", n)
	}
	var calls atomic.Int64
	srv := inTxServer(t, store, boltChargeHandler(t, &calls, func(int64) int { return 201 }, nil))
	defer srv.Close()
	for i := range 2 {
		if st, _, body := post(t, srv.URL+"/v1/charges", "k-kill", benchBody); st != 201 || body != `{"id":"ch_1"}` {
			t.Fatalf("request %d after the restart = %d %s; want 201 ch_1", i, st, body)
		}
	}
	if n := boltRows(t, store, "k-kill"); n != 1 || calls.Load() != 1 {
		t.Fatalf("rows = %d, handler calls = %d; want 1 and 1 (the retry ran once)", n, calls.Load())
	}
}
