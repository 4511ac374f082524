package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/internal/pgtest"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
)

// Issue 13: a tool slower than its lease. The owner is alive and working;
// a second Harness on the same journal must not take the intent over,
// re-run the effect, and leave the first caller told "lease lost".

const (
	leaseTTL  = 300 * time.Millisecond
	slowTool  = 1200 * time.Millisecond
	lateStart = 400 * time.Millisecond // after leaseTTL, before slowTool ends
)

// leaseStores gives the journals both harnesses share: one bbolt file, and
// the real PostgreSQL when AGENTONCE_PG_URL is set.
func leaseStores(t *testing.T) map[string]func(t *testing.T) journal.Store {
	return map[string]func(t *testing.T) journal.Store{
		"bolt":     func(t *testing.T) journal.Store { return probeBolt(t, nil) },
		"postgres": func(t *testing.T) journal.Store { return probePG(t, "", nil) },
	}
}

// raceSlowCall makes the same call on h1 and, lateStart later, on h2, and
// returns both results.
func raceSlowCall(t *testing.T, h1, h2 *harness.Harness, c harness.ToolCall) (first, second harness.Result) {
	t.Helper()
	ctx := context.Background()
	done := make(chan harness.Result, 1)
	go func() {
		r := h1.Call(ctx, c)
		done <- r
	}()
	time.Sleep(lateStart)
	second = h2.Call(ctx, c)
	first = <-done
	return first, second
}

// An Unkeyed tool whose Reconcile truthfully says "not yet" while the
// first run is still going: a takeover runs the effect a second time.
func TestLeaseOutlivedUnkeyed(t *testing.T) {
	for name, open := range leaseStores(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			var down ledger
			tool := harness.Tool{Name: "send_invoice", Effect: journal.Unkeyed,
				Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
					time.Sleep(slowTool) // the effect lands when the work is done
					down.effect(ctxKey(ctx))
					return json.RawMessage(`{"sent":true}`), nil
				},
				Reconcile: ledgerReconcile(&down, `{"sent":true}`)}
			h1 := probeHarness(t, st, &harness.Options{Owner: "agent-1", LeaseTTL: leaseTTL})
			h2 := probeHarness(t, st, &harness.Options{Owner: "agent-2", LeaseTTL: leaseTTL})
			probeRegister(t, h1, tool)
			probeRegister(t, h2, tool)

			first, second := raceSlowCall(t, h1, h2, probeCall("send_invoice", `{"invoice":7}`))
			time.Sleep(200 * time.Millisecond) // let a second execution, if any, land
			if n := down.total(); n != 1 {
				t.Errorf("effects = %d; want 1", n)
			}
			if !isSuccess(first) {
				t.Errorf("first caller: %s; want success", describe(first))
			}
			if !toldTheTruthLater(second) {
				t.Errorf("second caller: %s; want in progress, replayed or collapsed", describe(second))
			}
		})
	}
}

// A Keyed tool: the downstream absorbs the repeat, but a takeover sends the
// second request while the first is still being processed.
func TestLeaseOutlivedKeyed(t *testing.T) {
	for name, open := range leaseStores(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			var down ledger
			tool := harness.Tool{Name: "charge", Effect: journal.Keyed,
				Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
					// The downstream honours the key, so the repeat is absorbed:
					// what is counted is a second request for the key sent while
					// the first is still being processed.
					key := ctxKey(ctx)
					down.start(key)
					defer down.finish(key)
					time.Sleep(slowTool)
					if !down.happened(key) {
						down.effect(key)
					}
					return json.RawMessage(`{"charged":true}`), nil
				}}
			h1 := probeHarness(t, st, &harness.Options{Owner: "agent-1", LeaseTTL: leaseTTL})
			h2 := probeHarness(t, st, &harness.Options{Owner: "agent-2", LeaseTTL: leaseTTL})
			probeRegister(t, h1, tool)
			probeRegister(t, h2, tool)

			first, second := raceSlowCall(t, h1, h2, probeCall("charge", `{"amount":4900}`))
			if n := down.concurrent(); n != 0 {
				t.Errorf("requests sent for the key while it was running = %d; want 0", n)
			}
			if n := down.total(); n != 1 {
				t.Errorf("effects = %d; want 1", n)
			}
			if !isSuccess(first) {
				t.Errorf("first caller: %s; want success", describe(first))
			}
			if !toldTheTruthLater(second) {
				t.Errorf("second caller: %s; want in progress, replayed or collapsed", describe(second))
			}
		})
	}
}

const leaseChildEnv = "AGENTONCE_PROBE_LEASE_SCHEMA" // set in the child of TestLeaseOutlivedProcesses

// leaseHarness is the agent both processes of TestLeaseOutlivedProcesses
// run: an Unkeyed tool slower than its lease whose effect is a row in the
// journal's database, reconciled by looking for that row.
func leaseHarness(st *postgres.Store, owner string) (*harness.Harness, error) {
	effects := pgx.Identifier{st.Schema(), "effects"}.Sanitize()
	h := harness.New(st, &harness.Options{Owner: owner, LeaseTTL: leaseTTL, Retry: probeRetry})
	err := h.Register(harness.Tool{Name: "send_invoice", Effect: journal.Unkeyed,
		Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			if _, err := st.Pool().Exec(ctx, `INSERT INTO `+effects+` (key, what) VALUES ($1, 'started')`, ctxKey(ctx)); err != nil {
				return nil, err
			}
			time.Sleep(slowTool)
			if _, err := st.Pool().Exec(ctx, `INSERT INTO `+effects+` (key, what) VALUES ($1, 'sent')`, ctxKey(ctx)); err != nil {
				return nil, err
			}
			return json.RawMessage(`{"sent":true}`), nil
		},
		Reconcile: func(ctx context.Context, key uuid.UUID, _ json.RawMessage) downstream.Reconciliation {
			var n int
			if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM `+effects+` WHERE key = $1 AND what = 'sent'`, key.String()).Scan(&n); err != nil {
				return downstream.CannotTell(err)
			}
			if n > 0 {
				return downstream.Happened(json.RawMessage(`{"sent":true}`))
			}
			return downstream.DidNotHappen()
		}})
	return h, err
}

// TestLeaseOutlivedChild is the first agent process of
// TestLeaseOutlivedProcesses.
func TestLeaseOutlivedChild(t *testing.T) {
	schema := os.Getenv(leaseChildEnv)
	if schema == "" {
		t.Skip("helper process for TestLeaseOutlivedProcesses")
	}
	ctx := context.Background()
	st, err := postgres.Open(ctx, os.Getenv(pgtest.URLEnv), &postgres.Options{Schema: schema})
	if err != nil {
		fmt.Println("child: open:", err)
		os.Exit(3)
	}
	h, err := leaseHarness(st, "process-1")
	if err != nil {
		fmt.Println("child: register:", err)
		os.Exit(3)
	}
	res := h.Call(ctx, probeCall("send_invoice", `{"invoice":7}`))
	fmt.Printf("child: ok=%v %s\n", isSuccess(res), describe(res))
	h.Close()
	st.Close()
	os.Exit(0)
}

// Two real agent processes on one PostgreSQL journal: the first runs the
// slow tool, the second makes the same call after the first's lease TTL.
func TestLeaseOutlivedProcesses(t *testing.T) {
	st := probePG(t, "", nil)
	ctx := context.Background()
	effects := pgx.Identifier{st.Schema(), "effects"}.Sanitize()
	if _, err := st.Pool().Exec(ctx, `CREATE TABLE `+effects+` (key text NOT NULL, what text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLeaseOutlivedChild$")
	cmd.Env = append(os.Environ(), leaseChildEnv+"="+st.Schema())
	out := make(chan string, 1)
	go func() {
		b, err := cmd.CombinedOutput()
		if err != nil {
			b = fmt.Appendf(b, "\nprocess failed: %v", err)
		}
		out <- string(b)
	}()
	// Wait for the child's tool to start, then for its lease to run out.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM `+effects+` WHERE what = 'started'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child never started its tool: %s", <-out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(lateStart)

	h, err := leaseHarness(st, "process-2")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	second := h.Call(ctx, probeCall("send_invoice", `{"invoice":7}`))
	child := <-out

	var sent int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM `+effects+` WHERE what = 'sent'`).Scan(&sent); err != nil {
		t.Fatal(err)
	}
	if sent != 1 {
		t.Errorf("effects = %d; want 1", sent)
	}
	if !strings.Contains(child, "child: ok=true") {
		t.Errorf("first process: %s; want success", strings.TrimSpace(child))
	}
	if !toldTheTruthLater(second) {
		t.Errorf("second process: %s; want in progress, replayed or collapsed", describe(second))
	}
}
