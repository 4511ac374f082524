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

	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/internal/pgtest"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
	"github.com/agentonce/agentonce/retryclass"
)

const (
	fleetSchemaEnv = "AGENTONCE_HARNESS_FLEET_SCHEMA" // set in a fleet child
	fleetIntents   = 30
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
	h := harness.New(st, &harness.Options{Retry: &retryclass.Policy{
		InitialInterval: time.Millisecond, MaxInterval: 20 * time.Millisecond, InFlightBudget: time.Minute}})
	effects := pgx.Identifier{schema, "effects"}.Sanitize()
	h.Register(harness.Tool{Name: "charge", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			key, _ := harness.KeyFromContext(ctx)
			if _, err := st.Pool().Exec(ctx, `INSERT INTO `+effects+` (key) VALUES ($1)`, key); err != nil {
				return nil, err
			}
			time.Sleep(2 * time.Millisecond) // hold the intent in flight a little
			return json.RawMessage(fmt.Sprintf(`{"charged":%q}`, key)), nil
		}})
	for i := range fleetIntents {
		res := h.Call(ctx, harness.ToolCall{Tenant: "acme", Session: "fleet", Turn: "1", Tool: "charge",
			Input: json.RawMessage(fmt.Sprintf(`{"order":%d}`, i))})
		if !res.OK() {
			fmt.Printf("child: call %d: %v %v\n", i, res.Status, res.Err)
			os.Exit(3)
		}
		fmt.Printf("child: %s %s\n", res.Source, res.Output)
	}
	h.Close()
	st.Close()
	os.Exit(0)
}

// TestFleet runs four real agent processes that make the same 30 calls
// through one PostgreSQL journal at the same time: each intent's effect
// happens exactly once, and every process gets the same answer for it.
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

	const procs = 4
	outs := make([]chan string, procs)
	for p := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFleetChild$")
		cmd.Env = append(os.Environ(), fleetSchemaEnv+"="+schema)
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
				t.Fatalf("process %d: %s", p, rest)
			}
			answers[output]++
		}
	}
	if len(answers) != fleetIntents {
		t.Errorf("distinct answers = %d; want %d (one per intent, the same in every process)", len(answers), fleetIntents)
	}
	for out, n := range answers {
		if n != procs {
			t.Errorf("processes that answered %s = %d; want %d", out, n, procs)
		}
	}
	if executed != fleetIntents {
		t.Errorf("executions over all processes = %d; want %d (each intent in exactly one process)", executed, fleetIntents)
	}

	var rows, distinct int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*), count(DISTINCT key) FROM `+
		pgx.Identifier{schema, "effects"}.Sanitize()).Scan(&rows, &distinct); err != nil {
		t.Fatalf("counting effects: %v", err)
	}
	if rows != fleetIntents {
		t.Errorf("effects in the database = %d; want %d", rows, fleetIntents)
	}
	if distinct != fleetIntents {
		t.Errorf("distinct keys among the effects = %d; want %d", distinct, fleetIntents)
	}
}
