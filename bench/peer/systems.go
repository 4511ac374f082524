package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
	"github.com/agentonce/agentonce/keyderive"
)

// The payloads every system writes: a tool's input and its output.
var (
	stepInput  = []byte(`{"amount":4900,"currency":"USD","customer":"8812"}`)
	stepOutput = []byte(`{"charge":"ch_3Nq8","status":"succeeded"}`)
)

// A system is one way of recording a step. open connects it to schema on
// the server at url, its pool sized for the workers.
type system struct {
	name string
	open func(ctx context.Context, url, schema string, conns int) (*opened, error)
}

// opened is an open system: its call, its pools (whose sessions the
// measurement asks to publish their statistics) and how to close it.
type opened struct {
	// call runs perCall steps (one, or a session's), calling done as each
	// step ends, so that a sequential run times every step: a session's
	// own writes before its first step and after its last fall in those
	// steps' times.
	call    func(ctx context.Context, done func()) error
	perCall int
	pools   []*pgxpool.Pool
	close   func()
}

// single is the call of a system whose call is one step.
func single(step func(context.Context) error) func(context.Context, func()) error {
	return func(ctx context.Context, done func()) error {
		err := step(ctx)
		done()
		return err
	}
}

// systems are the contenders, in the table's order.
var systems = []system{
	{"agentonce", openAgentonce},
	{"dbos-session", openDBOSSession},
	{"dbos", openDBOS},
	{"floor", openFloor},
	{"raw-sync", func(ctx context.Context, url, schema string, conns int) (*opened, error) {
		return openRaw(ctx, url, schema, conns, false)
	}},
	{"raw-async", func(ctx context.Context, url, schema string, conns int) (*opened, error) {
		return openRaw(ctx, url, schema, conns, true)
	}},
}

func systemNames() string {
	names := make([]string, len(systems))
	for i, s := range systems {
		names[i] = s.name
	}
	return strings.Join(names, ",")
}

// openAgentonce is the journal a harness writes for a Keyed tool: Begin of
// a new intent, its write-ahead committed without waiting for the flush,
// then Complete, committed synchronously.
func openAgentonce(ctx context.Context, url, schema string, conns int) (*opened, error) {
	s, err := postgres.Open(ctx, url, &postgres.Options{Schema: schema, MaxConns: int32(conns)})
	if err != nil {
		return nil, err
	}
	return &opened{call: single(agentonceStep(s)), perCall: 1, pools: []*pgxpool.Pool{s.Pool()}, close: func() { _ = s.Close() }}, nil
}

// agentonceStep is one new intent on s: Begin, not durable, then Complete.
func agentonceStep(s *postgres.Store) func(context.Context) error {
	fp := keyderive.FingerprintOf(stepInput)
	return func(ctx context.Context) error {
		key := uuid.New()
		res, err := s.Begin(ctx, journal.BeginRequest{
			Key:         key,
			Intent:      keyderive.Intent{Tenant: "acme", Session: "s-1", Turn: "3", Tool: "charge"},
			Fingerprint: fp,
			Input:       stepInput,
			Owner:       "peer",
			AttemptID:   "attempt-1",
			LeaseTTL:    time.Minute,
		})
		if err != nil {
			return err
		}
		if res.Outcome != journal.Started {
			return fmt.Errorf("agentonce: begin of a new key: %v", res.Outcome)
		}
		_, err = s.Complete(ctx, journal.Completion{Key: key, Token: res.Token, State: journal.StateSucceeded, Output: stepOutput})
		return err
	}
}

// sessionSteps is how many tool calls the session of dbos-session runs:
// its workflow's own writes (its start and its end) are shared by them.
const sessionSteps = 10

// openDBOS is a DBOS workflow of one step, run to its result, under a
// workflow id of its own: a workflow per tool call.
func openDBOS(ctx context.Context, url, schema string, conns int) (*opened, error) {
	return openDBOSWorkflow(ctx, url, schema, conns, 1)
}

// openDBOSSession is how an agent runs on DBOS: its session a workflow,
// each tool call a step inside it (RunAsStep), sessionSteps of them.
func openDBOSSession(ctx context.Context, url, schema string, conns int) (*opened, error) {
	return openDBOSWorkflow(ctx, url, schema, conns, sessionSteps)
}

// openDBOSWorkflow runs, per call, a DBOS workflow of steps steps, each
// recorded by RunAsStep, to its result, under a workflow id of its own.
func openDBOSWorkflow(ctx context.Context, url, schema string, conns, steps int) (*opened, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(conns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	dctx, err := dbos.NewContext(ctx, dbos.Config{AppName: "agentonce-peer", SystemDBPool: pool, DatabaseSchema: schema,
		Logger: quietLogger()})
	if err != nil {
		pool.Close()
		return nil, err
	}
	charge := func(ctx context.Context) (string, error) { return string(stepOutput), nil }
	var marks sync.Map // workflow id → the call's done
	wf := func(ctx dbos.Context, n int) (out string, err error) {
		id, err := dbos.GetWorkflowID(ctx)
		if err != nil {
			return "", err
		}
		done, _ := marks.Load(id)
		for i := range n {
			if out, err = dbos.RunAsStep(ctx, charge, dbos.WithStepName("charge")); err != nil {
				return "", err
			}
			if i < n-1 {
				done.(func())() // the last step ends with the workflow's result
			}
		}
		return out, nil
	}
	dbos.RegisterWorkflow(dctx, wf, dbos.WithWorkflowName("peer"))
	if err := dbos.Launch(dctx); err != nil {
		pool.Close()
		return nil, err
	}
	call := func(ctx context.Context, done func()) error {
		id := uuid.NewString()
		marks.Store(id, done)
		defer marks.Delete(id)
		h, err := dbos.RunWorkflow(dctx, wf, steps, dbos.WithWorkflowID(id))
		if err != nil {
			return err
		}
		_, err = h.GetResult()
		done()
		return err
	}
	closeFn := func() {
		_ = dbos.Shutdown(dctx, 10*time.Second)
		pool.Close()
	}
	return &opened{call: call, perCall: steps, pools: []*pgxpool.Pool{pool}, close: closeFn}, nil
}

// openRaw is the floor: a table of the columns a step must keep, its
// primary key its only index, written with one INSERT and one UPDATE, each
// its own transaction. With async the INSERT's commit does not wait for
// the WAL flush (synchronous_commit off for its transaction), as a Keyed
// tool's write-ahead does not.
func openRaw(ctx context.Context, url, schema string, conns int, async bool) (*opened, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(conns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	t := pgx.Identifier{schema, "steps"}.Sanitize()
	if _, err := pool.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
		pool.Close()
		return nil, err
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+t+` (
		key        uuid PRIMARY KEY,
		state      smallint NOT NULL,
		input      bytea,
		output     bytea,
		created_ns bigint NOT NULL,
		updated_ns bigint NOT NULL)`); err != nil {
		pool.Close()
		return nil, err
	}
	insert := `INSERT INTO ` + t + ` (key, state, input, created_ns, updated_ns) VALUES ($1, 1, $2, $3, $3)`
	if async {
		// One statement, one round trip: set_config(…, true) is SET LOCAL
		// for the statement's own transaction.
		insert = `INSERT INTO ` + t + ` (key, state, input, created_ns, updated_ns)
			SELECT $1, 1, $2, $3, $3 FROM (SELECT set_config('synchronous_commit', 'off', true)) async`
	}
	update := `UPDATE ` + t + ` SET state = 2, output = $2, updated_ns = $3 WHERE key = $1`
	step := func(ctx context.Context) error {
		key := uuid.New()
		if _, err := pool.Exec(ctx, insert, key, stepInput, time.Now().UnixNano()); err != nil {
			return err
		}
		_, err := pool.Exec(ctx, update, key, stepOutput, time.Now().UnixNano())
		return err
	}
	return &opened{call: single(step), perCall: 1, pools: []*pgxpool.Pool{pool}, close: pool.Close}, nil
}

// openFloor is the fewest writes and indexes the guarantee's rules need,
// by hand: a write-ahead INSERT of the record with its key before the
// effect, committed without waiting for the flush as a Keyed tool's is,
// and a fenced UPDATE of its outcome after, committed synchronously, both
// at the server's clock. Its indexes are those a rule reads: the key, the
// session's timeline (List by session), the expiry (GC) and the
// suppression guard, partial on a column the outcome does not change, so
// that the UPDATE is heap-only (HOT) and writes no index entry. It keeps
// no seal, no attempts and no counts.
func openFloor(ctx context.Context, url, schema string, conns int) (*opened, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(conns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	t := pgx.Identifier{schema, "records"}.Sanitize()
	for _, ddl := range []string{`CREATE SCHEMA IF NOT EXISTS ` + pgx.Identifier{schema}.Sanitize(),
		`CREATE TABLE IF NOT EXISTS ` + t + ` (
			key              uuid PRIMARY KEY,
			tenant           text     NOT NULL,
			session          text     NOT NULL,
			turn             text     NOT NULL,
			tool             text     NOT NULL,
			fingerprint      bytea    NOT NULL,
			input            bytea,
			state            smallint NOT NULL,
			suppressed       boolean  NOT NULL,
			output           bytea,
			lease_owner      text     NOT NULL,
			lease_token      bigint   NOT NULL,
			lease_expires_ns bigint,
			created_ns       bigint   NOT NULL,
			updated_ns       bigint   NOT NULL,
			expires_ns       bigint   NOT NULL) WITH (fillfactor = 80)`,
		`CREATE INDEX IF NOT EXISTS floor_scope_idx ON ` + t + ` (tenant, session, turn, created_ns DESC)`,
		`CREATE INDEX IF NOT EXISTS floor_expires_idx ON ` + t + ` (expires_ns)`,
		`CREATE INDEX IF NOT EXISTS floor_guard_idx ON ` + t + ` (tenant, session, tool, turn, created_ns DESC)
			WHERE suppressed`,
	} {
		if _, err := pool.Exec(ctx, ddl); err != nil {
			pool.Close()
			return nil, err
		}
	}
	const now = `(extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000`
	insert := `INSERT INTO ` + t + ` (key, tenant, session, turn, tool, fingerprint, input, state, suppressed,
			lease_owner, lease_token, lease_expires_ns, created_ns, updated_ns, expires_ns)
		SELECT $1, 'acme', 's-1', '3', 'charge', $2, $3, 1, false, 'peer', 1, c.now + 60000000000, c.now, c.now,
			c.now + 86400000000000
		FROM (SELECT ` + now + ` AS now, set_config('synchronous_commit', 'off', true)) c`
	update := `UPDATE ` + t + ` SET state = 2, output = $2, lease_expires_ns = c.now, updated_ns = c.now
		FROM (SELECT ` + now + ` AS now) c WHERE key = $1 AND state = 1 AND lease_token = 1`
	fp := keyderive.FingerprintOf(stepInput)
	step := func(ctx context.Context) error {
		key := uuid.New()
		if _, err := pool.Exec(ctx, insert, key, fp[:], stepInput); err != nil {
			return err
		}
		tag, err := pool.Exec(ctx, update, key, stepOutput)
		if err == nil && tag.RowsAffected() != 1 {
			err = fmt.Errorf("floor: the outcome's UPDATE matched %d rows", tag.RowsAffected())
		}
		return err
	}
	return &opened{call: single(step), perCall: 1, pools: []*pgxpool.Pool{pool}, close: pool.Close}, nil
}
