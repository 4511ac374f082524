package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/internal/pgtest"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
	"github.com/agentonce/agentonce/retryclass"
)

const (
	fleetSchemaEnv = "AGENTONCE_HARNESS_FLEET_SCHEMA" // set in a fleet child
	fleetIndexEnv  = "AGENTONCE_HARNESS_FLEET_INDEX"  // which child, 0..fleetProcs-1
	fleetProcs     = 4
	fleetIntents   = 30
	// The slow tool runs longer than three leases: its intents stay with
	// their first owner only because it renews the lease while the other
	// processes wait.
	fleetLease     = 300 * time.Millisecond
	fleetSlowTool  = time.Second
	fleetSlowCalls = fleetProcs
)

// TestFleetChild is the body of the agent processes TestFleet starts: a
// harness on the shared PostgreSQL journal making the same calls as its
// siblings, each effect an INSERT into the shared database.
func TestFleetChild(t *testing.T) {
	schema := os.Getenv(fleetSchemaEnv)
	if schema == "" {
		t.Skip("helper process for TestFleet")
	}
	ctx := context.Background()
	st, err := postgres.Open(ctx, os.Getenv(pgtest.URLEnv), &postgres.Options{Schema: schema})
	if err != nil {
		fmt.Println("child: open:", err)
		os.Exit(3)
	}
	index, _ := strconv.Atoi(os.Getenv(fleetIndexEnv))
	h := harness.New(st, &harness.Options{LeaseTTL: fleetLease, Retry: &retryclass.Policy{
		InitialInterval: time.Millisecond, MaxInterval: 20 * time.Millisecond, InFlightBudget: time.Minute}})
	effects := pgx.Identifier{schema, "effects"}.Sanitize()
	// Each effect is an INSERT that nothing deduplicates: a second run of
	// an intent is a second row.
	charge := func(hold time.Duration) harness.Func {
		return func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			key, _ := downstream.KeyFromContext(ctx)
			if _, err := st.Pool().Exec(ctx, `INSERT INTO `+effects+` (key) VALUES ($1)`, key); err != nil {
				return nil, err
			}
			select { // hold the intent in flight
			case <-time.After(hold):
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
			return json.RawMessage(fmt.Sprintf(`{"charged":%q}`, key)), nil
		}
	}
	h.Register(
		harness.Tool{Name: "charge", Effect: journal.Keyed, Func: charge(2 * time.Millisecond)},
		harness.Tool{Name: "charge_slow", Effect: journal.Keyed, Func: charge(fleetSlowTool)},
	)
	do := func(tool string, i int) {
		res := h.Call(ctx, harness.ToolCall{Tenant: "acme", Session: "fleet", Turn: "1", Tool: tool,
			Input: json.RawMessage(fmt.Sprintf(`{"order":%d}`, i))})
		if !res.OK() {
			// Reported, and the run goes on, so that the parent counts
			// the effects of a broken run too.
			fmt.Printf("child: %v call %s %d: %v\n", res.Status, tool, i, res.Err)
			return
		}
		fmt.Printf("child: %s %s\n", res.Source, res.Output)
	}
	// Every process starts with a slow intent of its own and then meets
	// the others' while they run.
	for i := range fleetSlowCalls {
		do("charge_slow", (index+i)%fleetSlowCalls)
	}
	for i := range fleetIntents {
		do("charge", i)
	}
	h.Close()
	st.Close()
	os.Exit(0)
}

// TestFleet runs four real agent processes that make the same 34 calls
// through one PostgreSQL journal at the same time, four of them of a tool
// that runs for a second under a 300 ms lease (so an intent stays with its
// owner only by renewal, across processes): each intent's effect happens
// exactly once, and every process gets the same answer for it.
func TestFleet(t *testing.T) {
	schema := pgtest.Schema(t, "harness_fleet_")
	ctx := context.Background()
	st, err := postgres.Open(ctx, pgtest.URL(t), &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	defer st.Close()
	_, err = st.Pool().Exec(ctx, `CREATE TABLE `+pgx.Identifier{schema, "effects"}.Sanitize()+` (key uuid NOT NULL)`)
	if err != nil {
		t.Fatalf("creating the effects table: %v", err)
	}

	const procs = fleetProcs
	const intents = fleetIntents + fleetSlowCalls
	outs := make([]chan string, procs)
	for p := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFleetChild$")
		cmd.Env = append(os.Environ(), fleetSchemaEnv+"="+schema, fleetIndexEnv+"="+strconv.Itoa(p))
		outs[p] = make(chan string, 1)
		go func() {
			b, err := cmd.CombinedOutput()
			if err != nil {
				outs[p] <- fmt.Sprintf("process failed: %v\n%s", err, b)
				return
			}
			outs[p] <- string(b)
		}()
	}
	answers := map[string]int{}
	executed := 0
	for p := range procs {
		out := <-outs[p]
		for _, line := range strings.Split(out, "\n") {
			rest, ok := strings.CutPrefix(line, "child: ")
			if !ok {
				continue
			}
			status, output, _ := strings.Cut(rest, " ")
			switch status {
			case "executed":
				executed++
			case "replayed", "collapsed":
			default:
				t.Errorf("process %d: %s", p, rest)
				continue
			}
			answers[output]++
		}
	}
	if len(answers) != intents {
		t.Errorf("distinct answers = %d; want %d (one per intent, the same in every process)", len(answers), intents)
	}
	for out, n := range answers {
		if n != procs {
			t.Errorf("processes that answered %s = %d; want %d", out, n, procs)
		}
	}
	if executed != intents {
		t.Errorf("executions over all processes = %d; want %d (each intent in exactly one process)", executed, intents)
	}

	var rows, distinct int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*), count(DISTINCT key) FROM `+
		pgx.Identifier{schema, "effects"}.Sanitize()).Scan(&rows, &distinct); err != nil {
		t.Fatalf("counting effects: %v", err)
	}
	if rows != intents {
		t.Errorf("effects in the database = %d; want %d", rows, intents)
	}
	if distinct != intents {
		t.Errorf("distinct keys among the effects = %d; want %d", distinct, intents)
	}
}
