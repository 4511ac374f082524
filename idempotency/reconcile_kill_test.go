package idempotency_test

import (
	"bufio"
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
	"time"

	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/idempotency"
)

// reconcileKillEnv names the journal and the application's database of
// TestReconcileKillChild, "journal|app".
const reconcileKillEnv = "AGENTONCE_TEST_RECONCILE_KILL"

// appServer serves POST /v1/charges on the journal at journalPath, its
// handler committing a charge to the application's own bbolt file db and
// then calling after; Reconcile reads db.
func appServer(t *testing.T, journalPath string, db *bbolt.DB, runs *atomic.Int32, after func()) *httptest.Server {
	t.Helper()
	bucket := []byte("charges")
	reconcile := func(r *http.Request, key string) downstream.Reconciliation {
		var id []byte
		if err := db.View(func(tx *bbolt.Tx) error {
			if b := tx.Bucket(bucket); b != nil {
				id = b.Get([]byte(key))
			}
			return nil
		}); err != nil {
			return downstream.CannotTell(err)
		}
		if id == nil {
			return downstream.DidNotHappen()
		}
		out, err := idempotency.ResolvedResponse(http.StatusCreated, http.Header{"Content-Type": {"application/json"}}, fmt.Appendf(nil, `{"id":%q}`, id))
		if err != nil {
			return downstream.CannotTell(err)
		}
		return downstream.Happened(out)
	}
	m, err := idempotency.New(openAt(t, journalPath), &idempotency.Options{Reconcile: reconcile, Settle: time.Millisecond, ErrorLog: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := fmt.Sprintf("ch_%d", runs.Add(1))
		if err := db.Update(func(tx *bbolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(bucket)
			if err != nil {
				return err
			}
			return b.Put([]byte(r.Header.Get("Idempotency-Key")), []byte(id))
		}); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		after()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%q}`, id)
	})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func openApp(t *testing.T, path string) *bbolt.DB {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestReconcileKillChild is the server TestReconcileKilled kills: its
// handler has committed the charge and not answered.
func TestReconcileKillChild(t *testing.T) {
	paths := os.Getenv(reconcileKillEnv)
	if paths == "" {
		t.Skip("helper process for TestReconcileKilled")
	}
	journalPath, appPath, _ := strings.Cut(paths, "|")
	var runs atomic.Int32
	srv := appServer(t, journalPath, openApp(t, appPath), &runs, func() {
		fmt.Println("charged")
		select {}
	})
	post(t, srv.URL+"/v1/charges", "k-kill", `{"amount":100}`)
}

// A server killed after its handler committed the charge, before it
// answered: after the restart the retry is answered from the application's
// data, and the handler does not run again.
func TestReconcileKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	journalPath, appPath := filepath.Join(dir, "server.journal"), filepath.Join(dir, "app.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestReconcileKillChild$")
	cmd.Env = append(os.Environ(), reconcileKillEnv+"="+journalPath+"|"+appPath)
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
	if line != "charged\n" {
		t.Fatalf("child said %q; want charged", line)
	}

	var runs atomic.Int32
	srv := appServer(t, journalPath, openApp(t, appPath), &runs, func() {})
	for i := range 2 {
		st, h, body, _ := untilChecked(t, srv.URL+"/v1/charges", "k-kill")
		if st != 201 || body != `{"id":"ch_1"}` || h.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry %d after the restart = %d %s; want the child's 201 ch_1, replayed", i, st, body)
		}
	}
	if runs.Load() != 0 {
		t.Fatalf("handler runs after the restart = %d; want 0", runs.Load())
	}
}
