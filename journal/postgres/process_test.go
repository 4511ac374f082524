package postgres_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/internal/pgtest"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
)

// The multi-process tests re-execute this test binary as TestChildProcess
// with these variables set; the child does one job and reports on stdout,
// one "child: …" line per fact.
const (
	childEnv       = "AGENTONCE_PG_CHILD"        // the child's job
	childSchemaEnv = "AGENTONCE_PG_CHILD_SCHEMA" // the shared schema
	childOwnerEnv  = "AGENTONCE_PG_CHILD_OWNER"  // the child's owner name
	childSkewEnv   = "AGENTONCE_PG_CHILD_SKEW"   // added to the child's server clock (test seam)
	childArgEnv    = "AGENTONCE_PG_CHILD_ARG"    // a job argument
)

// raceIntents is how many intents the racing children share.
const raceIntents = 24

// TestChildProcess is not a test: it is the body of the child processes
// that the multi-process tests start.
func TestChildProcess(t *testing.T) {
	job := os.Getenv(childEnv)
	if job == "" {
		t.Skip("helper process for the multi-process tests; runs only when " + childEnv + " is set")
	}
	if err := runChild(job); err != nil {
		fmt.Printf("child: error %v\n", err)
		os.Exit(3)
	}
	os.Exit(0)
}

func runChild(job string) error {
	ctx := context.Background()
	skew, _ := time.ParseDuration(os.Getenv(childSkewEnv))
	owner := os.Getenv(childOwnerEnv)
	schema := os.Getenv(childSchemaEnv)
	opts := &postgres.Options{Schema: schema}
	if skew != 0 {
		// Leases are judged by the server's clock; moving it (the test
		// seam) is how a child sees a dead owner's lease expired.
		opts.TestClock = func() time.Time { return time.Now().Add(skew) }
	}
	s, err := postgres.Open(ctx, os.Getenv(pgtest.URLEnv), opts)
	if err != nil {
		return err
	}
	defer s.Close()
	q := pgx.Identifier{schema}.Sanitize()
	switch job {
	case "race":
		// Wait at the parent's barrier so that every child races at once.
		if _, err := s.Pool().Exec(ctx, `SELECT pg_advisory_lock_shared($1)`, barrierKey(schema)); err != nil {
			return err
		}
		for i := range raceIntents {
			req := request(i, `{}`)
			req.Owner = owner
			req.Durable = i%2 == 0
			for {
				res, err := s.Begin(ctx, req)
				if err != nil {
					return err
				}
				if res.Outcome == journal.Answered {
					break
				}
				if res.Outcome == journal.Held {
					time.Sleep(2 * time.Millisecond)
					continue
				}
				if res.Outcome != journal.Started {
					return fmt.Errorf("intent %d: Begin = %v", i, res.Outcome)
				}
				// The side effect, done only by the owner.
				if _, err := s.Pool().Exec(ctx, `INSERT INTO `+q+`.executions (key, n) VALUES ($1, 1)
					ON CONFLICT (key) DO UPDATE SET n = executions.n + 1`, req.Key); err != nil {
					return err
				}
				if _, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded}); err != nil {
					return err
				}
				fmt.Printf("child: started %d\n", i)
				break
			}
		}
	case "hold":
		// Take the leases of two intents and die holding them.
		for _, i := range []int{0, 1} {
			req := request(i, `{}`)
			req.Owner, req.LeaseTTL = owner, time.Hour
			req.Effect = []journal.Effect{journal.Keyed, journal.Unkeyed}[i]
			res, err := s.Begin(ctx, req)
			if err != nil {
				return err
			}
			fmt.Printf("child: %s %d\n", outcomeName(res.Outcome), res.Token)
		}
		fmt.Println("child: holding")
		time.Sleep(time.Hour) // until the parent kills us
	case "take":
		// After the holder died: take over, then act by the effect kind.
		for _, i := range []int{0, 1} {
			req := request(i, `{}`)
			req.Owner = owner
			res, err := s.Begin(ctx, req)
			if err != nil {
				return err
			}
			fmt.Printf("child: %s %d\n", outcomeName(res.Outcome), res.Token)
			if res.Outcome != journal.TakenOver {
				continue
			}
			switch res.Record.Effect {
			case journal.Keyed:
				// Run again with the same key.
				if err := s.StartAttempt(ctx, journal.AttemptRequest{Key: req.Key, Token: res.Token, ID: "attempt-2",
					PrevClass: "unknown", PrevError: "owner died", Durable: true}); err != nil {
					return err
				}
				_, err = s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded})
			default:
				// Unkeyed: never re-run silently.
				_, err = s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateUnknown,
					ErrorClass: "unknown", ErrorMessage: "owner died during the attempt"})
			}
			if err != nil {
				return err
			}
		}
	case "atomic":
		// Begin (or take over) and run the effect in the outcome's
		// transaction; with ARG=hang, stop between the effect and the commit.
		req := request(0, `{}`)
		req.Owner, req.LeaseTTL = owner, time.Hour
		res, err := s.Begin(ctx, req)
		if err != nil {
			return err
		}
		fmt.Printf("child: %s %d\n", outcomeName(res.Outcome), res.Token)
		if res.Outcome != journal.Started && res.Outcome != journal.TakenOver {
			return nil
		}
		_, err = s.CompleteInTx(ctx, req.Key, res.Token, func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
			if _, err := tx.Exec(ctx, `INSERT INTO `+q+`.effects (key) VALUES ($1)`, req.Key); err != nil {
				return nil, err
			}
			if os.Getenv(childArgEnv) == "hang" {
				fmt.Println("child: in effect")
				time.Sleep(time.Hour) // until the parent kills us
			}
			return []byte(`"done"`), nil
		})
		if err != nil {
			return err
		}
		fmt.Println("child: committed")
	default:
		return fmt.Errorf("unknown job %q", job)
	}
	return nil
}

// outcomeName names a Begin outcome for the children's reports.
func outcomeName(o journal.BeginOutcome) string {
	names := map[journal.BeginOutcome]string{journal.Started: "Started", journal.Answered: "Answered",
		journal.Held: "Held", journal.TakenOver: "TakenOver", journal.Mismatch: "Mismatch", journal.Guarded: "Guarded"}
	if n, ok := names[o]; ok {
		return n
	}
	return fmt.Sprintf("outcome(%d)", o)
}

func barrierKey(schema string) int64 {
	var h int64 = 1469598103
	for _, c := range schema {
		h = h*31 + int64(c)
	}
	return h & (1<<31 - 1)
}

// child is a running child process and the lines it reported.
type child struct {
	cmd   *exec.Cmd
	lines chan string
	mu    sync.Mutex
	all   []string // guarded by mu
}

func startChild(t *testing.T, schema, job, owner string, extra ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+job, childSchemaEnv+"="+schema, childOwnerEnv+"="+owner)
	cmd.Env = append(cmd.Env, extra...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, lines: make(chan string, 1000)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "child: "); ok {
				c.mu.Lock()
				c.all = append(c.all, line)
				c.mu.Unlock()
				c.lines <- line
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return c
}

// expect waits for the child's next line and checks it.
func (c *child) expect(t *testing.T, want string) {
	t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			t.Fatalf("child %d exited before reporting %q", c.cmd.Process.Pid, want)
		}
		if line != want {
			t.Fatalf("child reported %q; want %q", line, want)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("child did not report %q in time", want)
	}
}

// wait waits for a child to exit successfully and returns its lines.
func (c *child) wait(t *testing.T) []string {
	t.Helper()
	for range c.lines {
	}
	err := c.cmd.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		t.Fatalf("child %s: %v; reported %q", c.cmd.Env[len(os.Environ())], err, c.all)
	}
	return c.all
}

// kill SIGKILLs the child and reaps it.
func (c *child) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := c.cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child after SIGKILL: %v; want killed by SIGKILL", err)
	}
}

// TestProcessesRace starts several processes that race the same intents
// through one database: each intent is Started exactly once, and its side
// effect (counted by the owner in a table) happens exactly once.
func TestProcessesRace(t *testing.T) {
	ctx := context.Background()
	schema := newSchema(t)
	s := openIn(t, schema, nil)
	q := pgx.Identifier{schema}.Sanitize()
	if _, err := s.Pool().Exec(ctx, `CREATE TABLE `+q+`.executions (key uuid PRIMARY KEY, n integer NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	barrier, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer barrier.Release()
	if _, err := barrier.Exec(ctx, `SELECT pg_advisory_lock($1)`, barrierKey(schema)); err != nil {
		t.Fatal(err)
	}
	const procs = 4
	var children []*child
	for p := range procs {
		children = append(children, startChild(t, schema, "race", fmt.Sprintf("proc-%d", p)))
	}
	// Release the barrier once every child waits at it.
	waitForBlocked(t, s, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted
		HAVING count(*) = $2`, barrierKey(schema), procs)
	if _, err := barrier.Exec(ctx, `SELECT pg_advisory_unlock($1)`, barrierKey(schema)); err != nil {
		t.Fatal(err)
	}
	started := map[string]int{}
	for p, c := range children {
		lines := c.wait(t)
		for _, line := range lines {
			started[line]++
		}
		t.Logf("process %d started %d of the %d intents", p, len(lines), raceIntents)
	}
	for i := range raceIntents {
		if n := started["started "+strconv.Itoa(i)]; n != 1 {
			t.Errorf("intent %d Started in %d processes; want 1", i, n)
		}
	}
	rows, err := s.Pool().Query(ctx, `SELECT key, n FROM `+q+`.executions`)
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for rows.Next() {
		var key [16]byte
		var n int
		if err := rows.Scan(&key, &n); err != nil {
			t.Fatal(err)
		}
		count++
		if n != 1 {
			t.Errorf("intent %x executed %d times; want 1", key, n)
		}
	}
	if rows.Err() != nil || count != raceIntents {
		t.Fatalf("executions = %d intents, %v; want %d", count, rows.Err(), raceIntents)
	}
	for i := range raceIntents {
		if r, err := s.Get(ctx, request(i, `{}`).Key); err != nil || r.State != journal.StateSucceeded {
			t.Errorf("intent %d = %v, %v; want succeeded", i, r.State, err)
		}
	}
}

// TestProcessKilledHoldingLease SIGKILLs a process that holds two leases.
// While the leases live, others see the intents in flight; once they have
// expired (the second process's server clock, a test seam, runs two hours ahead), another
// process takes both over and follows the effect kind: the Keyed intent
// runs again with the same key, the Unkeyed one is recorded unknown. The
// dead owner's token is fenced.
func TestProcessKilledHoldingLease(t *testing.T) {
	ctx := context.Background()
	schema := newSchema(t)
	s := openIn(t, schema, nil)

	holder := startChild(t, schema, "hold", "holder")
	holder.expect(t, "Started 1")
	holder.expect(t, "Started 1")
	holder.expect(t, "holding")
	holder.kill(t)

	for i := range 2 {
		req := request(i, `{}`)
		req.Owner = "parent"
		if res, err := s.Begin(ctx, req); err != nil || res.Outcome != journal.Held {
			t.Fatalf("Begin(intent %d) while the dead owner's lease lives = %v, %v; want Held", i, res.Outcome, err)
		}
	}

	taker := startChild(t, schema, "take", "taker", childSkewEnv+"=2h")
	if got := taker.wait(t); strings.Join(got, ",") != "TakenOver 2,TakenOver 2" {
		t.Fatalf("taker reported %q; want both intents TakenOver with token 2", got)
	}
	keyed, err := s.Get(ctx, request(0, `{}`).Key)
	if err != nil || keyed.State != journal.StateSucceeded || len(keyed.Attempts) != 2 || keyed.Attempts[0].Class != "unknown" {
		t.Fatalf("Keyed intent = %s with %d attempts, %v; want succeeded after a second attempt", keyed.State, len(keyed.Attempts), err)
	}
	unkeyed, err := s.Get(ctx, request(1, `{}`).Key)
	if err != nil || unkeyed.State != journal.StateUnknown || len(unkeyed.Attempts) != 1 {
		t.Fatalf("Unkeyed intent = %s with %d attempts, %v; want unknown, not re-run", unkeyed.State, len(unkeyed.Attempts), err)
	}
	if _, err := s.Complete(ctx, journal.Completion{Key: keyed.Key, Token: 1, State: journal.StateFailed}); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("Complete with the dead owner's token = %v; want ErrFenced", err)
	}
}

// TestProcessKilledInAtomicEffect SIGKILLs a process after its effect's
// INSERT and before the COMMIT that would record the outcome with it:
// neither is visible. The retry, after the lease expires, produces exactly
// one effect, and a later call replays it.
func TestProcessKilledInAtomicEffect(t *testing.T) {
	ctx := context.Background()
	schema := newSchema(t)
	s := openIn(t, schema, nil)
	effects := effectsTable(t, s)
	key := request(0, `{}`).Key

	c := startChild(t, schema, "atomic", "first", childArgEnv+"=hang")
	c.expect(t, "Started 1")
	c.expect(t, "in effect")
	// The effect is written but not committed: invisible from outside.
	if n := countEffects(t, s, effects, key); n != 0 {
		t.Fatalf("effects visible before the commit = %d; want 0", n)
	}
	c.kill(t)
	if n := countEffects(t, s, effects, key); n != 0 {
		t.Fatalf("effects after SIGKILL = %d; want 0", n)
	}
	if r, err := s.Get(ctx, key); err != nil || r.State != journal.StatePending || r.Lease.Token != 1 {
		t.Fatalf("record after SIGKILL = %s token %d, %v; want pending token 1", r.State, r.Lease.Token, err)
	}

	retry := startChild(t, schema, "atomic", "second", childSkewEnv+"=2h")
	if got := retry.wait(t); strings.Join(got, ",") != "TakenOver 2,committed" {
		t.Fatalf("retry reported %q; want TakenOver 2, committed", got)
	}
	if n := countEffects(t, s, effects, key); n != 1 {
		t.Fatalf("effects after the retry = %d; want 1", n)
	}
	again := startChild(t, schema, "atomic", "third", childSkewEnv+"=2h")
	if got := again.wait(t); strings.Join(got, ",") != "Answered 0" {
		t.Fatalf("third call reported %q; want Answered (a replay)", got)
	}
	if n := countEffects(t, s, effects, key); n != 1 {
		t.Fatalf("effects after the replay = %d; want 1", n)
	}
	if r, err := s.Get(ctx, key); err != nil || r.State != journal.StateSucceeded || string(r.Output) != `"done"` {
		t.Fatalf("record = %s %q, %v; want succeeded \"done\"", r.State, r.Output, err)
	}
}
