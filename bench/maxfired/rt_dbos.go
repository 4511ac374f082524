package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/agentonce/agentonce/bench/maxfired/worker"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal/postgres"
	"github.com/agentonce/agentonce/retryclass"
)

func init() {
	runtimes = append(runtimes, runtime{Name: "dbos", Plain: dbosPlain, Once: dbosOnce, NeedsPG: true,
		How: "a DBOS Transact workflow (one per intent, its id the intent) whose charge is a RunAsStep, on PostgreSQL; after a crash DBOS's own recovery at Launch resumes it (each schedule has an executor id and an application version of its own: DBOS puts a recovered workflow on an internal queue that any live executor of the version dequeues, and the schedules run at once)"})
}

// The PostgreSQL schemas of the sweep's DBOS system database and of the
// agentonce journal beside it.
const (
	dbosSchema    = "maxfired_dbos"
	journalSchema = "maxfired_journal"
)

func dbosPlain(ctx context.Context, j job) (outcome, error) {
	out, err := dbosRun(ctx, j, func(ctx context.Context, in worker.ChargeInput) (string, error) {
		b, err := worker.DoCharge(ctx, j.Pay, in)
		return string(b), err
	})
	return outcome{Status: "charged", Detail: out}, err
}

// dbosOnce is the same workflow whose step charges through the harness,
// on a journal in the same PostgreSQL.
func dbosOnce(ctx context.Context, j job) (outcome, error) {
	store, err := postgres.Open(ctx, j.PGURL, &postgres.Options{Schema: journalSchema, MaxConns: 2})
	if err != nil {
		return outcome{}, err
	}
	// LeaseTTL: PostgreSQL cannot tell a dead owner from a slow one, so
	// a crashed attempt is taken over once its lease runs out; 3 s (renewed
	// every second) keeps the sweep short, the default minute gives the
	// same counts later.
	h := harness.New(store, &harness.Options{Observer: worker.JournalPoints(), CheckWait: 10 * time.Second, LeaseTTL: 3 * time.Second, OnClose: store.Close})
	defer h.Close()
	if err := h.Register(worker.ChargeTool(j)); err != nil {
		return outcome{}, err
	}
	out, err := dbosRun(ctx, j, func(ctx context.Context, in worker.ChargeInput) (string, error) {
		b, _ := json.Marshal(in)
		res := h.Call(ctx, harness.ToolCall{Session: j.Intent, Turn: "1", Tool: "charge", Input: b})
		var oe *harness.OutcomeError
		switch {
		case res.Status == harness.Succeeded:
			return string(res.Output), nil
		case res.Status == harness.InProgress,
			res.Status == harness.Suppressed && errors.As(res.Err, &oe) && oe.Class == retryclass.InFlight:
			// A dead process's lease not yet expired, or its outcome
			// being checked: DBOS retries the step.
			return "", fmt.Errorf("%w: %v", errInProgress, res.Err)
		}
		return "", fmt.Errorf("the charge is %s: %v", res.Status, res.Err)
	}, dbos.WithStepMaxRetries(10), dbos.WithStepBaseInterval(500*time.Millisecond), dbos.WithStepMaxInterval(2*time.Second),
		dbos.WithStepRetryPredicate(func(err error) bool { return errors.Is(err, errInProgress) }))
	if err == nil {
		return outcome{Status: "charged", Detail: out}, nil
	}
	if st := worker.LastStatus(); st != 0 && st != harness.Succeeded && st != harness.InProgress {
		return outcome{Status: "person", Detail: err.Error()}, nil // the workflow failed on it
	}
	return outcome{}, err
}

// errInProgress is the step's error while the harness checks a crashed
// attempt's outcome: DBOS retries the step.
var errInProgress = errors.New("the charge's outcome is being checked")

// dbosRun launches DBOS (recovering this schedule's workflow if a dead
// process left it pending) and waits for the workflow's result.
func dbosRun(ctx context.Context, j job, charge func(context.Context, worker.ChargeInput) (string, error), opts ...dbos.StepOption) (string, error) {
	dctx, err := dbos.NewContext(ctx, dbos.Config{AppName: "agentonce-maxfired", DatabaseURL: j.PGURL,
		DatabaseSchema: dbosSchema, ExecutorID: j.Intent, ApplicationVersion: j.Intent, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return "", err
	}
	wf := func(ctx dbos.Context, intent string) (string, error) {
		worker.Point("dbos workflow started") // its status row is written
		out, err := dbos.RunAsStep(ctx, func(ctx context.Context) (string, error) {
			return charge(ctx, worker.ChargeInput{Intent: intent, Amount: 4900})
		}, append(opts, dbos.WithStepName("charge"))...)
		if err == nil {
			worker.Point("dbos step recorded")
		}
		return out, err
	}
	dbos.RegisterWorkflow(dctx, wf, dbos.WithWorkflowName("charge"))
	if err := dbos.Launch(dctx); err != nil {
		return "", err
	}
	defer dbos.Shutdown(dctx, 5*time.Second)
	h, err := dbos.RetrieveWorkflow[string](dctx, j.Intent)
	if err != nil {
		// Not started before: start it.
		h, err = dbos.RunWorkflow(dctx, wf, j.Intent, dbos.WithWorkflowID(j.Intent))
	}
	if err != nil {
		return "", err
	}
	out, err := h.GetResult()
	if err == nil {
		worker.Point("dbos workflow recorded")
	}
	return out, err
}
