package worker

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
)

var (
	crashAt    int64  // the number of the point to die at, 0: none
	crashName  string // or the name of the first point to die at
	points     atomic.Int64
	lastStatus atomic.Uint32 // the status of the harness's last answer
)

// Point is a crash point: the process dies here if it is the chosen one.
func Point(what string) {
	if n := points.Add(1); n == crashAt || what == crashName {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

// Job is what a worker is given.
type Job struct {
	Dir    string // the run's own directory: journal, checkpoints
	Pay    string // the payment service's URL
	Intent string // the intent this run charges, its session too
	PGURL  string // PostgreSQL (AGENTONCE_PG_URL), for DBOS
}

// Outcome is the worker's last line.
type Outcome struct {
	// Status is "charged" (the caller holds the charge), "pending" (the
	// outcome is being checked: run again) or "person" (left to an
	// operator: no run will answer it).
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Points counts the crash points the run passed.
	Points int64 `json:"points"`
}

// Runtime is one framework as the sweep runs it, plain and with
// agentonce.
type Runtime struct {
	Name        string
	Plain, Once func(ctx context.Context, j Job) (Outcome, error)
	// How says how the plain framework resumes (its best durability).
	How string
	// NeedsPG: the runtime runs only with AGENTONCE_PG_URL.
	NeedsPG bool
}

// Main runs one invocation as args say (-runtime, -mode plain|once, -dir,
// -pay, -intent, -crash N|name) and exits.
func Main(args []string, rts []Runtime) {
	fs := flag.NewFlagSet("worker", flag.ExitOnError)
	name := fs.String("runtime", "", "runtime")
	mode := fs.String("mode", "plain", "plain or once")
	var j Job
	fs.StringVar(&j.Dir, "dir", "", "run directory")
	fs.StringVar(&j.Pay, "pay", "", "payment service URL")
	fs.StringVar(&j.Intent, "intent", "", "intent")
	crash := fs.String("crash", "0", "crash point: its number (0: none) or its name (effect)")
	fs.Parse(args)
	if n, err := strconv.ParseInt(*crash, 10, 64); err == nil {
		crashAt = n
	} else {
		crashName = *crash
	}
	j.PGURL = os.Getenv("AGENTONCE_PG_URL")
	var rt *Runtime
	var names []string
	for i := range rts {
		names = append(names, rts[i].Name)
		if rts[i].Name == *name {
			rt = &rts[i]
		}
	}
	if rt == nil || j.Dir == "" || j.Pay == "" || j.Intent == "" || (*mode != "plain" && *mode != "once") {
		fmt.Fprintf(os.Stderr, "maxfired worker: need -runtime (one of %s), -mode plain or once, -dir, -pay and -intent\n", strings.Join(names, ", "))
		os.Exit(2)
	}
	run := rt.Plain
	if *mode == "once" {
		run = rt.Once
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := run(ctx, j)
	if err != nil {
		fmt.Fprintf(os.Stderr, "maxfired worker %s %s: %v\n", *name, *mode, err)
		os.Exit(1)
	}
	out.Points = points.Load()
	json.NewEncoder(os.Stdout).Encode(out)
	os.Exit(0)
}

// OpenHarness opens the run's bbolt journal, its writes crash points.
func OpenHarness(ctx context.Context, j Job) (*harness.Harness, error) {
	return agentonce.Open(ctx, filepath.Join(j.Dir, "agent.journal"), &agentonce.OpenOptions{
		Options: harness.Options{Observer: JournalPoints(), CheckWait: 10 * time.Second}, GCEvery: -1})
}

// JournalPoints is the Observer that makes the journal's writes crash
// points and keeps the last answer's status.
func JournalPoints() harness.Observer {
	return harness.ObserverFunc(func(_ context.Context, e harness.Event) {
		switch e.Kind {
		case harness.EventAfterWriteAhead:
			Point("journal write-ahead")
		case harness.EventTakeover: // a resume's claim of a dead attempt
			Point("journal takeover")
		case harness.EventAfterOutcome:
			Point("journal outcome")
		case harness.EventResult:
			lastStatus.Store(uint32(e.Status))
		}
	})
}

// ChargeTool is the charge as an agentonce tool: Unkeyed (the service
// ignores keys), with a Reconcile hook that looks the intent's charge up.
// Timeout and Settle bound how long a crashed attempt's request may still
// reach the service; a resume waits them out before it asks.
func ChargeTool(j Job) harness.Tool {
	t := harness.Typed("charge", journal.Unkeyed, func(ctx context.Context, in ChargeInput) (json.RawMessage, error) {
		return DoCharge(ctx, j.Pay, in)
	})
	t.Description = "Charges the customer."
	t.Reconcile = func(ctx context.Context, _ uuid.UUID, input json.RawMessage) downstream.Reconciliation {
		return Reconcile(ctx, j.Pay, input)
	}
	t.Timeout, t.Settle = time.Second, 300*time.Millisecond
	return t
}

// LastStatus is the status of the harness's last answer in this process,
// zero if it answered none.
func LastStatus() harness.Status { return harness.Status(lastStatus.Load()) }

// OnceOutcome is a run with agentonce's outcome: what the harness last
// answered, with the framework's answer as detail.
func OnceOutcome(answer string) Outcome {
	switch LastStatus() {
	case harness.Succeeded:
		return Outcome{Status: "charged", Detail: answer}
	case harness.InProgress:
		return Outcome{Status: "pending", Detail: answer}
	default:
		return Outcome{Status: "person", Detail: LastStatus().String() + ": " + answer}
	}
}

// ChargeArgs are the model's arguments for intent's charge.
func ChargeArgs(intent string) string {
	b, _ := json.Marshal(ChargeInput{Intent: intent, Amount: 4900})
	return string(b)
}
