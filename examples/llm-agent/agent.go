package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/agentoncetest"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal/postgres"
	"github.com/agentonce/agentonce/retryclass"
)

//go:embed script.json
var defaultScript []byte

// tenant is the one customer account this demo acts for.
const tenant = "acme"

// crashPoints are the -crash-at values, named as the harness names the
// events at which the process dies.
var crashPoints = []harness.EventKind{
	harness.EventBeforeWriteAhead,
	harness.EventAfterWriteAhead,
	harness.EventAfterEffect,
	harness.EventAfterOutcome,
}

// options are the command's flags.
type options struct {
	journal   string
	seed      uint64
	faultRate float64
	crashAt   string
	crashTool string
	crashKill bool
	json      bool
	reset     bool
	script    string
	verbose   bool
	state     string
	// noReconcile registers send_email without its Reconcile hook.
	noReconcile bool
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("llm-agent", flag.ContinueOnError)
	fs.StringVar(&o.journal, "journal", "agent-journal.db", "journal `location`: a bbolt file (the fake APIs keep their state in FILE.downstream/) or a postgres:// URL (state in -state)")
	fs.StringVar(&o.state, "state", "", "`directory` where the fake APIs keep their state; default: the journal file's path + .downstream, or ./agent-journal.downstream for a PostgreSQL journal")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the fault schedule")
	fs.Float64Var(&o.faultRate, "fault-rate", 0.4, "probability in [0, 1] that a request to the APIs fails")
	fs.StringVar(&o.crashAt, "crash-at", "", "exit with status 3 at the first call that reaches `POINT`: before-write-ahead, after-write-ahead, after-effect or after-outcome")
	fs.StringVar(&o.crashTool, "crash-tool", "", "with -crash-at, crash only in a call of this `tool` (charge_card, send_email or set_shipping_address)")
	fs.BoolVar(&o.crashKill, "crash-kill", false, "with -crash-at, die by SIGKILL instead of exiting with status 3")
	fs.BoolVar(&o.json, "json", false, "print only a JSON summary on standard output")
	fs.BoolVar(&o.reset, "reset", false, "delete the journal and the APIs' state first")
	fs.StringVar(&o.script, "script", "", "model transcript `file` (JSON, see agentoncetest.Script); default: the built-in one")
	fs.BoolVar(&o.verbose, "v", false, "log the harness's events to standard error")
	fs.BoolVar(&o.noReconcile, "no-reconcile", false, "register send_email without its Reconcile hook: a mail whose outcome a crash or a lost answer hid stays unknown until an operator resolves it (agentctl resolve)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (all settings are flags; see -h)", fs.Arg(0))
	}
	if o.faultRate < 0 || o.faultRate > 1 {
		return o, fmt.Errorf("-fault-rate %v is outside [0, 1]", o.faultRate)
	}
	if o.crashAt != "" && crashPoint(o.crashAt) == 0 {
		return o, fmt.Errorf("-crash-at %q: want before-write-ahead, after-write-ahead, after-effect or after-outcome", o.crashAt)
	}
	switch o.crashTool {
	case "", "charge_card", "send_email", "set_shipping_address":
	default:
		return o, fmt.Errorf("-crash-tool %q: want charge_card, send_email or set_shipping_address (lookup_customer is not journaled)", o.crashTool)
	}
	return o, nil
}

func crashPoint(name string) harness.EventKind {
	for _, k := range crashPoints {
		if k.String() == name {
			return k
		}
	}
	return 0
}

// summary is what a run did. Its JSON form is the -json output.
type summary struct {
	Journal   string  `json:"journal"`
	Seed      uint64  `json:"seed"`
	FaultRate float64 `json:"fault_rate"`
	// Calls counts the tool calls the model made; the next nine count
	// their results: successes by how they were learned, the rest by
	// status.
	Calls      int `json:"calls"`
	Executed   int `json:"executed"`
	Replayed   int `json:"replayed"`
	Collapsed  int `json:"collapsed"`
	Reconciled int `json:"reconciled"`
	Suppressed int `json:"suppressed"`
	Unknown    int `json:"unknown"`
	InProgress int `json:"in_progress"`
	Failed     int `json:"failed"`
	Rejected   int `json:"rejected"`
	// Retries counts attempts the harness retried; InFlightWaits counts
	// waits for an intent in flight elsewhere (none on a bbolt journal,
	// whose open ends a crashed process's leases).
	Retries       int `json:"retries"`
	InFlightWaits int `json:"in_flight_waits"`
	// Faults counts the faults injected, by kind.
	Faults         map[string]int `json:"faults"`
	FaultsInjected int            `json:"faults_injected"`
	// SideEffects counts what the APIs really did, over every run on this
	// journal: charges, mails, and address changes (one per intent).
	SideEffects int `json:"side_effects"`
	// DuplicateSideEffects counts a second charge or mail for one intent.
	// It must be 0.
	DuplicateSideEffects int `json:"duplicate_side_effects"`
	// SucceededIntents counts the distinct side-effecting intents (keys)
	// whose result in this run is a success; after a complete run it
	// equals SideEffects.
	SucceededIntents int `json:"succeeded_intents"`
	// IdempotentReruns counts extra runs of the naturally idempotent
	// upsert (harmless by nature, shown for honesty).
	IdempotentReruns int   `json:"idempotent_reruns"`
	ElapsedMS        int64 `json:"elapsed_ms"`
	// Results lists every call's result in order.
	Results []callResult `json:"results"`
}

// callResult is one call's result in the JSON summary.
type callResult struct {
	CallID   string `json:"call_id"`
	Turn     string `json:"turn"`
	Tool     string `json:"tool"`
	Status   string `json:"status"`
	Source   string `json:"source"`
	Key      string `json:"key"`
	Attempts int    `json:"attempts"`
}

// demoPolicy is the retry policy, scaled down so that the demo finishes in
// a few seconds: real APIs want waits a hundred times longer.
var demoPolicy = &retryclass.Policy{
	MaxAttempts:     8,
	MaxElapsed:      10 * time.Second,
	InitialInterval: 5 * time.Millisecond,
	MaxInterval:     50 * time.Millisecond,
	MaxRetryAfter:   20 * time.Millisecond,
	InFlightBudget:  8 * time.Second,
}

// leaseTTL is how long an attempt's claim on an intent lasts (the harness
// raises it to 1.5 × the tool timeout + 1s). A crashed process's claims end
// when the next run opens the bbolt journal.
const leaseTTL = time.Second

// observer counts retries and in-flight waits, and crashes the process on
// purpose when -crash-at says so.
type observer struct {
	retries, inFlight atomic.Int64
	crashAt           harness.EventKind
	crashTool         string
	crashKill         bool
	crashed           atomic.Bool
}

func (o *observer) Observe(ctx context.Context, e harness.Event) {
	switch e.Kind {
	case harness.EventRetry:
		o.retries.Add(1)
	case harness.EventInFlight:
		o.inFlight.Add(1)
	}
	if o.crashAt == 0 || e.Kind != o.crashAt || (o.crashTool != "" && e.Tool != o.crashTool) {
		return
	}
	if !o.crashed.CompareAndSwap(false, true) {
		select {} // another call is crashing the process; never go on
	}
	how := "exit status 3"
	if o.crashKill {
		how = "SIGKILL"
	}
	fmt.Fprintf(os.Stderr, "llm-agent: crashing (%s) at %s in %s, key %s, as -crash-at asked\n", how, e.Kind, e.Tool, e.Key)
	if o.crashKill {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	os.Exit(3)
}

// run runs the agent loop over the script and returns what happened:
// setup, the loop, the tally.
func run(ctx context.Context, o options, out io.Writer) (summary, error) {
	start := time.Now()
	sum := summary{Journal: o.journal, Seed: o.seed, FaultRate: o.faultRate}
	d, err := setup(ctx, o)
	if err != nil {
		return sum, err
	}
	defer d.close()

	say := func(format string, args ...any) {
		if !o.json {
			fmt.Fprintf(out, format+"\n", args...)
		}
	}
	say("agentonce demo: journal %s, fault seed %d, fault rate %.2f", o.journal, o.seed, o.faultRate)
	say("(backoff scaled down for the demo: %v first wait, %v at most, Retry-After capped at %v; tool timeout %v; lease %v)",
		demoPolicy.InitialInterval, demoPolicy.MaxInterval, demoPolicy.MaxRetryAfter, toolTimeout, leaseTTL)
	succeeded, err := d.loop(ctx, &sum, say)
	if err != nil {
		return sum, err
	}
	d.tally(&sum, succeeded)
	sum.ElapsedMS = time.Since(start).Milliseconds()

	if o.json {
		enc := json.NewEncoder(out)
		return sum, enc.Encode(sum)
	}
	printSummary(out, sum)
	fmt.Fprintf(out, "Draw this session: go run ./cmd/agentctl --journal %s timeline --session %s --html timeline.html\n", o.journal, d.script.Session)
	return sum, nil
}

// demo is what a run sets up: the script and its model, the APIs behind
// their fault transports, and the harness over the journal.
type demo struct {
	script                agentoncetest.Script
	model                 *agentoncetest.ScriptedModel
	api                   *api
	apiFaults, mailFaults *agentoncetest.FaultTransport
	obs                   *observer
	h                     *harness.Harness
}

// setup resets the journal and the APIs' state when asked, loads the
// script, starts the APIs and opens the harness with the tools registered.
func setup(ctx context.Context, o options) (*demo, error) {
	stateDir, files := o.state, []string{o.journal}
	if postgres.IsURL(o.journal) {
		// -reset leaves a database alone: drop its schema by hand.
		files = nil
		if stateDir == "" {
			stateDir = "agent-journal.downstream"
		}
	} else if stateDir == "" {
		stateDir = o.journal + ".downstream"
	}
	if o.reset {
		for _, p := range append(files, stateDir) {
			if err := os.RemoveAll(p); err != nil {
				return nil, err
			}
		}
	}
	d := &demo{}
	var err error
	if d.script, err = loadScript(o.script); err != nil {
		return nil, err
	}
	if d.model, err = agentoncetest.NewScriptedModel(d.script); err != nil {
		return nil, err
	}
	if d.api, err = startAPI(stateDir); err != nil {
		return nil, err
	}

	// Faults sit under the harness's Transport, so every retry crosses
	// them. The mail API has no idempotency: a duplicated delivery or a
	// reset after sending would send a second mail whatever the client
	// does, so its faults are those a client can survive.
	d.apiFaults = agentoncetest.NewFaultTransport(http.DefaultTransport, &agentoncetest.FaultOptions{
		Seed: o.seed, Rate: o.faultRate, RetryAfter: time.Second,
	})
	d.mailFaults = agentoncetest.NewFaultTransport(http.DefaultTransport, &agentoncetest.FaultOptions{
		Seed: o.seed ^ 0x6d61696c, Rate: o.faultRate, RetryAfter: time.Second,
		Kinds: []agentoncetest.Fault{agentoncetest.LoseResponse, agentoncetest.Delay, agentoncetest.Unavailable, agentoncetest.ResetBeforeSend},
		Match: func(r *http.Request) bool { return r.Method == http.MethodPost }, // Reconcile's query stays reliable
	})
	apiClient := &http.Client{Transport: &downstream.Transport{Base: d.apiFaults}}
	mailClient := &http.Client{Transport: &downstream.Transport{Base: d.mailFaults}}

	d.obs = &observer{crashAt: crashPoint(o.crashAt), crashTool: o.crashTool, crashKill: o.crashKill}
	hopts := &agentonce.OpenOptions{Options: harness.Options{LeaseTTL: leaseTTL, Retry: demoPolicy, Observer: d.obs}}
	if o.verbose {
		hopts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if d.h, err = agentonce.Open(ctx, o.journal, hopts); err != nil {
		d.api.close()
		return nil, err
	}
	ts := tools(d.api.srv.URL, apiClient, mailClient)
	if o.noReconcile {
		for i := range ts {
			if ts[i].Name == "send_email" {
				ts[i].Reconcile = nil
			}
		}
	}
	if err := d.h.Register(ts...); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// close closes the harness, then the APIs.
func (d *demo) close() {
	d.h.Close()
	d.api.close()
}

// loop runs the model's steps until the script ends: each step's calls go
// through the harness together and their results go back to the model. It
// counts every result into sum and returns the side-effecting intents that
// succeeded, by key.
func (d *demo) loop(ctx context.Context, sum *summary, say func(string, ...any)) (map[string]bool, error) {
	succeeded := map[string]bool{}
	var results []agentoncetest.ToolResult
	for {
		step, err := d.model.Next(ctx, results)
		if errors.Is(err, agentoncetest.ErrScriptDone) {
			return succeeded, nil
		}
		if err != nil {
			return nil, err
		}
		if step.User != "" {
			say("\nuser  > %s", step.User)
		}
		results = nil
		if step.Final() {
			say("model > %s", step.Text)
			continue
		}
		calls := make([]harness.ToolCall, len(step.Calls))
		for i, c := range step.Calls {
			say("model > %s %s", c.Name, c.Input)
			calls[i] = harness.ToolCall{ID: c.ID, Tenant: tenant, Session: d.script.Session, Turn: step.Turn,
				Tool: c.Name, Input: c.Input, StepKey: stepKey(c)}
		}
		for _, r := range d.h.CallAll(ctx, calls) {
			countResult(sum, step.Turn, r)
			if r.OK() && r.Tool != "lookup_customer" {
				succeeded[r.Key.String()] = true
			}
			tr := agentoncetest.ResultOf(r)
			say("tool  < %-10s %s (attempts %d): %s", tr.Status, r.Tool, r.Attempts, clip(tr.Content, 110))
			results = append(results, tr)
		}
	}
}

// countResult adds one call's result to sum: successes by how they were
// learned, the rest by status.
func countResult(sum *summary, turn string, r harness.Result) {
	sum.Calls++
	sum.Results = append(sum.Results, callResult{CallID: r.CallID, Turn: turn, Tool: r.Tool,
		Status: r.Status.String(), Source: r.Source.String(), Key: r.Key.String(), Attempts: r.Attempts})
	switch {
	case r.OK() && r.Source == harness.Executed:
		sum.Executed++
	case r.OK() && r.Source == harness.Replayed:
		sum.Replayed++
	case r.OK() && r.Source == harness.Collapsed:
		sum.Collapsed++
	case r.OK() && r.Source == harness.Reconciled:
		sum.Reconciled++
	}
	switch r.Status {
	case harness.Succeeded:
	case harness.InProgress:
		sum.InProgress++
	case harness.Suppressed:
		sum.Suppressed++
	case harness.Unknown:
		sum.Unknown++
	case harness.Failed:
		sum.Failed++
	default:
		sum.Rejected++
	}
}

// tally adds what the loop cannot see call by call: the harness's retries
// and waits, the faults injected, and the side effects the APIs performed.
func (d *demo) tally(sum *summary, succeeded map[string]bool) {
	sum.Retries = int(d.obs.retries.Load())
	sum.InFlightWaits = int(d.obs.inFlight.Load())
	sum.Faults = map[string]int{}
	for _, f := range agentoncetest.AllFaults {
		if n := d.apiFaults.Injected(f) + d.mailFaults.Injected(f); n > 0 {
			sum.Faults[f.String()] = n
		}
	}
	sum.FaultsInjected = d.apiFaults.TotalInjected() + d.mailFaults.TotalInjected()
	sum.SideEffects = d.api.sideEffects()
	sum.DuplicateSideEffects = d.api.duplicates()
	sum.SucceededIntents = len(succeeded)
	sum.IdempotentReruns = d.api.addresses.TotalEffects() - d.api.addresses.Keys()
}

// stepKey gives charges the order they pay for as their key: one order,
// one charge, whatever amount or wording the model comes up with. A
// changed input under the same order is a mismatch, suppressed.
func stepKey(c agentoncetest.ToolCall) string {
	if c.Name != "charge_card" {
		return ""
	}
	var in struct {
		Order string `json:"order"`
	}
	if json.Unmarshal(c.Input, &in) != nil || in.Order == "" {
		return ""
	}
	return "charge/order/" + in.Order
}

func loadScript(path string) (agentoncetest.Script, error) {
	if path == "" {
		return agentoncetest.ParseScript(defaultScript)
	}
	return agentoncetest.LoadScript(path)
}

func printSummary(w io.Writer, s summary) {
	var faults []string
	for _, f := range agentoncetest.AllFaults {
		if n := s.Faults[f.String()]; n > 0 {
			faults = append(faults, fmt.Sprintf("%s %d", f, n))
		}
	}
	slices.Sort(faults)
	if len(faults) == 0 {
		faults = []string{"none"}
	}
	fmt.Fprintf(w, "\n%d tool calls: %d executed, %d replayed, %d collapsed, %d reconciled, %d suppressed, %d unknown, %d in progress, %d failed, %d rejected\n",
		s.Calls, s.Executed, s.Replayed, s.Collapsed, s.Reconciled, s.Suppressed, s.Unknown, s.InProgress, s.Failed, s.Rejected)
	fmt.Fprintf(w, "faults injected: %d (%s); retries: %d; waits for an intent in flight: %d\n",
		s.FaultsInjected, strings.Join(faults, ", "), s.Retries, s.InFlightWaits)
	fmt.Fprintf(w, "side effects at the APIs (all runs on this journal): %d; intents that succeeded: %d; duplicate side effects: %d\n",
		s.SideEffects, s.SucceededIntents, s.DuplicateSideEffects)
	if s.DuplicateSideEffects != 0 {
		fmt.Fprintln(w, "DUPLICATE SIDE EFFECTS: this is a bug in agentonce; please report it with the journal.")
	}
	fmt.Fprintf(w, "done in %v. Run it again: every call is answered from the journal.\n", time.Duration(s.ElapsedMS)*time.Millisecond)
	fmt.Fprintf(w, "Inspect: go run ./cmd/agentctl ls --journal %s\n", s.Journal)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
