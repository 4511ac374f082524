package harness_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/journal/postgres"
)

// meteredStore wraps a store the way a metrics or tracing wrapper would:
// it counts Begins and forwards nothing else of its own.
type meteredStore struct {
	journal.Store
	begins atomic.Int64
}

func (s *meteredStore) Begin(ctx context.Context, req journal.BeginRequest) (journal.BeginResult, error) {
	s.begins.Add(1)
	return s.Store.Begin(ctx, req)
}

// forwardingStore also forwards the optional capabilities it knows of.
type forwardingStore struct{ *meteredStore }

func (s forwardingStore) LocalReads() bool {
	lr, ok := s.Store.(interface{ LocalReads() bool })
	return ok && lr.LocalReads()
}

func (s forwardingStore) CompleteWith(ctx context.Context, key uuid.UUID, token uint64, effect func(context.Context) ([]byte, error)) (journal.Record, error) {
	return s.Store.(interface {
		CompleteWith(context.Context, uuid.UUID, uint64, func(context.Context) ([]byte, error)) (journal.Record, error)
	}).CompleteWith(ctx, key, token, effect)
}

// A wrapped store keeps the local-read fast path only when it forwards
// LocalReads: a re-issue of a settled call is then answered without Begin.
func TestWrappedStoreKeepsLocalReads(t *testing.T) {
	for _, forward := range []bool{false, true} {
		bs, err := bolt.Open(filepath.Join(t.TempDir(), "j.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		m := &meteredStore{Store: bs}
		var st journal.Store = m
		if forward {
			st = forwardingStore{m}
		}
		h := harness.New(st, nil)
		if err := h.Register(harness.Tool{Name: "echo", Effect: journal.Idempotent,
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`1`), nil }}); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if res := h.Call(context.Background(), call("echo", `{}`)); res.Status == harness.Rejected {
				t.Fatal(res.Err)
			}
		}
		want := int64(3) // every call reaches Begin
		if forward {
			want = 1 // the two re-issues are answered by one read each
		}
		if got := m.begins.Load(); got != want {
			t.Errorf("forward LocalReads %v: Begins = %d; want %d", forward, got, want)
		}
		h.Close()
		bs.Close()
	}
}

// A store wrapped for metrics is refused for InTx unless it forwards
// CompleteWith, and then the effect and the outcome commit together.
func TestWrappedStoreKeepsInTx(t *testing.T) {
	st := pgStore(t)
	m := &meteredStore{Store: st}
	inTx := postgres.InTx(func(ctx context.Context, tx pgx.Tx, in json.RawMessage) (json.RawMessage, error) {
		var n int
		if err := tx.QueryRow(ctx, `SELECT 41 + 1`).Scan(&n); err != nil {
			return nil, err
		}
		return json.Marshal(n)
	})
	err := harness.New(m, nil).Register(harness.Tool{Name: "tx", Effect: journal.Keyed, InTx: inTx})
	if err == nil || !strings.Contains(err.Error(), "CompleteWith") {
		t.Fatalf("Register(InTx) on a wrapper without CompleteWith = %v; want an error naming CompleteWith", err)
	}
	h := harness.New(forwardingStore{m}, nil)
	if err := h.Register(harness.Tool{Name: "tx", Effect: journal.Keyed, InTx: inTx}); err != nil {
		t.Fatalf("Register(InTx) on a forwarding wrapper = %v", err)
	}
	res := h.Call(context.Background(), call("tx", `{}`))
	if res.Status == harness.Rejected || string(res.Output) != "42" {
		t.Fatalf("Call(tx) = %s, %v; want output 42", res.Output, res.Err)
	}
	rec, err := st.Get(context.Background(), res.Key)
	if err != nil || rec.State != journal.StateSucceeded || string(rec.Output) != "42" {
		t.Errorf("record = %v %s, %v; want succeeded with 42", rec.State, rec.Output, err)
	}
}

// The harness's own build pulls in no PostgreSQL package: a bbolt-only
// user does not compile pgx.
func TestHarnessImportsNoPostgres(t *testing.T) {
	deps, err := goList(t, "-deps", "github.com/agentonce/agentonce/harness")
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, d := range strings.Fields(deps) {
		if strings.Contains(d, "jackc") || strings.HasSuffix(d, "journal/postgres") {
			t.Errorf("harness depends on %s", d)
		}
	}
}

func goList(t *testing.T, args ...string) (string, error) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	out, err := exec.Command(goBin, append([]string{"list"}, args...)...).Output()
	return string(out), err
}
