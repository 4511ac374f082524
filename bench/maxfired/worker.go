package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// A worker is one invocation of one runtime in a subprocess: it charges
// one intent and prints its outcome as a JSON line, unless it is killed
// first. Every durable write it makes (its journal's, its framework's
// checkpoints) and the effect itself are numbered crash points; at the
// one numbered -crash it SIGKILLs itself.
var (
	crashAt   int64  // the number of the point to die at, 0: none
	crashName string // or the name of the first point to die at
	points    atomic.Int64
)

// point is a crash point: the process dies here if it is the chosen one.
func point(what string) {
	if n := points.Add(1); n == crashAt || what == crashName {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

// job is what a worker is given.
type job struct {
	dir    string // the run's own directory: journal, checkpoints
	pay    string // the payment service's URL
	intent string // the intent this run charges, its session too
	pgURL  string // PostgreSQL, for DBOS
}

// outcome is the worker's last line.
type outcome struct {
	// Status is "charged" (the caller holds the charge), "pending" (the
	// outcome is being checked: run again) or "person" (left to an
	// operator: no run will answer it).
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
	Points int64  `json:"points"`
}

// runtime is one framework as the sweep runs it, plain and with agentonce.
type runtime struct {
	name  string
	plain func(ctx context.Context, j job) (outcome, error)
	once  func(ctx context.Context, j job) (outcome, error)
	// how says how the plain framework resumes (its best durability).
	how string
	// needsPG: the runtime runs only with AGENTONCE_PG_URL.
	needsPG bool
}

var runtimes []runtime // filled by each runtime's file; ordered puts them in the table's order

// tableOrder is the table's order of the runtimes: the server side, the
// MCP servers, the agent frameworks and SDKs, then DBOS.
var tableOrder = []string{"middleware", "mcp-go", "go-sdk", "eino", "anthropic-sdk-go", "openai-go", "dbos"}

// ordered sorts runtimes into tableOrder, any other after them.
func ordered() {
	rank := func(name string) int {
		if i := slices.Index(tableOrder, name); i >= 0 {
			return i
		}
		return len(tableOrder)
	}
	slices.SortStableFunc(runtimes, func(a, b runtime) int { return rank(a.name) - rank(b.name) })
}

func findRuntime(name string) (runtime, bool) {
	for _, r := range runtimes {
		if r.name == name {
			return r, true
		}
	}
	return runtime{}, false
}

func workerMain(args []string) {
	fs := flag.NewFlagSet("worker", flag.ExitOnError)
	name := fs.String("runtime", "", "runtime")
	mode := fs.String("mode", "plain", "plain or once")
	var j job
	fs.StringVar(&j.dir, "dir", "", "run directory")
	fs.StringVar(&j.pay, "pay", "", "payment service URL")
	fs.StringVar(&j.intent, "intent", "", "intent")
	crash := fs.String("crash", "0", "crash point: its number (0: none) or its name (effect)")
	fs.Parse(args)
	if n, err := strconv.ParseInt(*crash, 10, 64); err == nil {
		crashAt = n
	} else {
		crashName = *crash
	}
	j.pgURL = os.Getenv("AGENTONCE_PG_URL")
	rt, ok := findRuntime(*name)
	if !ok || j.dir == "" || j.pay == "" || j.intent == "" {
		fmt.Fprintf(os.Stderr, "maxfired worker: need -runtime (one of %s), -dir, -pay and -intent\n", runtimeNames())
		os.Exit(2)
	}
	run := rt.plain
	if *mode == "once" {
		run = rt.once
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
}

func runtimeNames() string {
	var n []string
	for _, r := range runtimes {
		n = append(n, r.name)
	}
	return strings.Join(n, ", ")
}

// openHarness opens the run's bbolt journal, its writes crash points.
func openHarness(ctx context.Context, j job) (*harness.Harness, error) {
	return agentonce.Open(ctx, filepath.Join(j.dir, "agent.journal"), &agentonce.OpenOptions{
		Options: harness.Options{Observer: journalPoints(), CheckWait: 10 * time.Second}, GCEvery: -1})
}

// journalPoints is the Observer that makes the journal's writes crash
// points and keeps the last answer's status.
func journalPoints() harness.Observer {
	return harness.ObserverFunc(func(_ context.Context, e harness.Event) {
		switch e.Kind {
		case harness.EventAfterWriteAhead:
			point("journal write-ahead")
		case harness.EventAfterOutcome:
			point("journal outcome")
		case harness.EventResult:
			lastStatus.Store(uint32(e.Status))
		}
	})
}

// chargeTool is the charge as an agentonce tool: Unkeyed (the service
// ignores keys), with a Reconcile hook that looks the intent's charge up.
// Timeout and Settle bound how long a crashed attempt's request may still
// reach the service; a resume waits them out before it asks.
func chargeTool(j job) harness.Tool {
	t := harness.Typed("charge", journal.Unkeyed, func(ctx context.Context, in chargeInput) (json.RawMessage, error) {
		return doCharge(ctx, j.pay, in)
	})
	t.Description = "Charges the customer."
	t.Reconcile = func(ctx context.Context, _ uuid.UUID, input json.RawMessage) downstream.Reconciliation {
		return reconcile(ctx, j.pay, input)
	}
	t.Timeout, t.Settle = time.Second, 300*time.Millisecond
	return t
}

// lastStatus is the status of the harness's last answer in this process.
var lastStatus atomic.Uint32

// onceOutcome is a run with agentonce's outcome: what the harness last
// answered, with the framework's answer as detail.
func onceOutcome(answer string) outcome {
	switch harness.Status(lastStatus.Load()) {
	case harness.Succeeded:
		return outcome{Status: "charged", Detail: answer}
	case harness.InProgress:
		return outcome{Status: "pending", Detail: answer}
	default:
		return outcome{Status: "person", Detail: harness.Status(lastStatus.Load()).String() + ": " + answer}
	}
}

// chargeArgs are the model's arguments for intent's charge.
func chargeArgs(intent string) string {
	b, _ := json.Marshal(chargeInput{Intent: intent, Amount: 4900})
	return string(b)
}
