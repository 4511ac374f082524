package main

import (
	"context"
	"fmt"
	"strings"
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

// opened is an open system: its step, its pools (whose sessions the
// measurement asks to publish their statistics) and how to close it.
type opened struct {
	step  func(context.Context) error
	pools []*pgxpool.Pool
	close func()
}

// systems are the contenders, in the table's order.
var systems = []system{
	{"agentonce", openAgentonce},
	{"dbos", openDBOS},
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
	step := agentonceStep(s)
	return &opened{step: step, pools: []*pgxpool.Pool{s.Pool()}, close: func() { _ = s.Close() }}, nil
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

// openDBOS is a DBOS workflow of one step, run to its result, under a
// workflow id of its own.
func openDBOS(ctx context.Context, url, schema string, conns int) (*opened, error) {
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
	wf := func(ctx dbos.Context, input string) (string, error) {
		return dbos.RunAsStep(ctx, charge, dbos.WithStepName("charge"))
	}
	dbos.RegisterWorkflow(dctx, wf, dbos.WithWorkflowName("peer"))
	if err := dbos.Launch(dctx); err != nil {
		pool.Close()
		return nil, err
	}
	step := func(ctx context.Context) error {
		h, err := dbos.RunWorkflow(dctx, wf, string(stepInput), dbos.WithWorkflowID(uuid.NewString()))
		if err != nil {
			return err
		}
		_, err = h.GetResult()
		return err
	}
	closeFn := func() {
		_ = dbos.Shutdown(dctx, 10*time.Second)
		pool.Close()
	}
	return &opened{step: step, pools: []*pgxpool.Pool{pool}, close: closeFn}, nil
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
	return &opened{step: step, pools: []*pgxpool.Pool{pool}, close: pool.Close}, nil
}
