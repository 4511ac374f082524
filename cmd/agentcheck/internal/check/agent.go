package check

// This file is the only one that uses the harness's types: porting the
// checker to a changed harness API is an edit here.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	_ "github.com/agentonce/agentonce/journal/postgres" // postgres:// journals
	"github.com/agentonce/agentonce/retryclass"
)

// WorkerOptions are the inputs of one agent process.
type WorkerOptions struct {
	// Plan is the path of the plan file.
	Plan string
	// Journal is the journal location: a bbolt file or a postgres:// URL.
	Journal string
	// History is the path of this process's history file.
	History string
	// Proc names this process incarnation ("w1.3"); it is also the
	// harness's lease owner, so attempt ids start with it.
	Proc string
	// Slot is the worker slot: which of the plan's issues are this
	// process's.
	Slot int
	// Final makes this the final pass: one call for every payload of every
	// intent, no schedule, no skew.
	Final bool
}

// slowReconcile is how long the slow Reconcile hook pauses before it asks.
const slowReconcile = 300 * time.Millisecond

// workerRetry is the retry policy of every worker: short waits, so that a
// run of seconds sees many retries.
var workerRetry = &retryclass.Policy{
	MaxAttempts:     4,
	MaxElapsed:      8 * time.Second,
	InitialInterval: 20 * time.Millisecond,
	MaxInterval:     200 * time.Millisecond,
	InFlightBudget:  3 * time.Second,
	MaxRetryAfter:   300 * time.Millisecond,
}

// agent is one worker process's state.
type agent struct {
	plan   *Plan
	log    *Log
	h      *harness.Harness
	client *http.Client
	proc   string
	calls  atomic.Uint64
}

// RunWorker is the body of an agent process: it opens the journal through
// the harness, registers the plan's tools, makes this slot's calls at
// their times (first re-issuing, once, every intent whose time has passed:
// the re-issues after a restart), and returns when all are answered.
func RunWorker(ctx context.Context, o WorkerOptions) error {
	plan, err := ReadPlan(o.Plan)
	if err != nil {
		return err
	}
	log, err := OpenLog(o.History, o.Proc)
	if err != nil {
		return err
	}
	defer log.Close()
	skew := time.Duration(0)
	if !o.Final && o.Slot < len(plan.Skews) {
		skew = time.Duration(plan.Skews[o.Slot]) * time.Millisecond
	}
	hopts := &agentonce.OpenOptions{
		Options: harness.Options{
			Owner:    o.Proc,
			LeaseTTL: time.Duration(plan.LeaseMS) * time.Millisecond,
			Retry:    workerRetry,
		},
		Journal: &journal.Options{
			Now: func() time.Time { return time.Now().Add(skew) },
		},
	}
	if _, ok := journal.Scheme(o.Journal); !ok {
		// A bbolt file: the previous incarnation's lock goes with its death.
		hopts.Journal.StoreOptions = &bolt.Options{LockTimeout: 20 * time.Second}
	}
	// The runner terminates PostgreSQL backends at random, an open's among
	// them, and a failover leaves no primary for a while: the worker tries
	// again for about 10 s, as an agent's supervisor would restart it.
	var h *harness.Harness
	for try := 0; ; try++ {
		if h, err = agentonce.Open(ctx, o.Journal, hopts); err == nil || try == 24 || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(min(100*(try+1), 500)) * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("worker %s: open journal: %w", o.Proc, err)
	}
	a := &agent{plan: plan, log: log, h: h, proc: o.Proc,
		client: &http.Client{Transport: &downstream.Transport{Base: &http.Transport{MaxIdleConnsPerHost: 64}}}}
	for _, spec := range plan.Tools {
		if err := h.Register(a.tool(spec)); err != nil {
			h.Close()
			return err
		}
	}
	if o.Final {
		a.reissue(ctx, plan.Intents)
	} else {
		a.schedule(ctx, o.Slot)
	}
	return h.Close()
}

// schedule makes the slot's calls: past ones once each, now; future ones
// at their time.
func (a *agent) schedule(ctx context.Context, slot int) {
	epoch := time.Unix(0, a.plan.Epoch)
	now := time.Now()
	var past []Intent
	var wg sync.WaitGroup
	for _, in := range a.plan.Intents {
		passed := false
		for _, is := range in.Issues {
			if a.plan.Store == "bolt" {
				is.Worker = slot
			}
			if is.Worker != slot {
				continue
			}
			at := epoch.Add(time.Duration(in.AtMS+is.AfterMS) * time.Millisecond)
			if at.Before(now) {
				passed = true
				continue
			}
			wg.Go(func() {
				time.Sleep(time.Until(at))
				a.issue(ctx, &in, is)
			})
		}
		if passed {
			past = append(past, in)
		}
	}
	a.reissue(ctx, past)
	wg.Wait()
}

// reissue calls every payload of intents once, eight at a time.
func (a *agent) reissue(ctx context.Context, intents []Intent) {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range intents {
		in := &intents[i]
		for p := range in.Payloads {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				a.issue(ctx, in, Issue{Worker: -1, Payloads: []int{p}})
			})
		}
	}
	wg.Wait()
}

// issue makes one issue's calls at once: each payload, Dup more copies of
// each, in goroutines or in one CallAll.
func (a *agent) issue(ctx context.Context, in *Intent, is Issue) {
	if is.CancelMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(is.CancelMS)*time.Millisecond)
		defer cancel()
	}
	var calls []harness.ToolCall
	var ps []int
	for _, p := range is.Payloads {
		for range is.Dup + 1 {
			calls = append(calls, a.call(in, p))
			ps = append(ps, p)
		}
	}
	mode := "call"
	if is.All {
		mode = "callall"
	}
	if is.CancelMS > 0 {
		mode += fmt.Sprintf(" cancel-after=%dms", is.CancelMS)
	}
	for i, c := range calls {
		a.log.Add(Event{Ev: EvCall, Intent: in.ID, P: ps[i], Call: c.ID, Note: mode})
	}
	if is.All {
		results := a.h.CallAll(ctx, calls)
		for i, res := range results {
			a.log.Add(answerEvent(in.ID, ps[i], calls[i].ID, res))
		}
		return
	}
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() {
			res := a.h.Call(ctx, c)
			a.log.Add(answerEvent(in.ID, ps[i], c.ID, res))
		})
	}
	wg.Wait()
}

// checkTenant is the tenant of every call; the session is sessionOf's.
const checkTenant = "agentcheck"

// sessionOf is the session of every call of plan.
func sessionOf(plan *Plan) string { return fmt.Sprintf("seed-%d", plan.Seed) }

func (a *agent) call(in *Intent, p int) harness.ToolCall {
	input, _ := json.Marshal(body{Intent: in.ID, P: p})
	return harness.ToolCall{
		ID:      fmt.Sprintf("%s/%d", a.proc, a.calls.Add(1)),
		Tenant:  checkTenant,
		Session: sessionOf(a.plan),
		Turn:    in.ID,
		Tool:    in.Tool,
		Input:   input,
		StepKey: in.StepKey,
	}
}

// answerEvent records a Result in the checker's words.
func answerEvent(intent string, p int, callID string, res harness.Result) Event {
	e := Event{Ev: EvAnswer, Intent: intent, P: p, Call: callID, Status: res.Status.String(), Text: res.ForModel()}
	if res.Key != uuid.Nil {
		e.Key = res.Key.String()
	}
	if res.Err != nil {
		e.Err = res.Err.Error()
	}
	e.Outcome = map[harness.Status]string{harness.Succeeded: OutSucceeded, harness.Failed: OutFailed,
		harness.Suppressed: OutSuppressed, harness.Unknown: OutUnknown, harness.InProgress: OutInProgress,
		harness.Rejected: OutRejected, harness.AwaitingApproval: OutAwaiting}[res.Status]
	if res.OK() {
		e.Output = res.Output
		e.Source = map[harness.Source]string{harness.Executed: SrcExecuted, harness.Replayed: SrcReplayed,
			harness.Collapsed: SrcCollapsed, harness.Reconciled: SrcReconciled}[res.Source]
	}
	var oe *harness.OutcomeError
	if res.Status == harness.Suppressed && errors.As(res.Err, &oe) && oe.Class == retryclass.InFlight {
		// A 409 past the in-flight budget: the action is under way.
		e.Outcome = OutInProgress
	}
	return e
}

// tool makes the harness tool of a spec: an HTTP call to the downstream
// through downstream.Transport, which carries the key and the attempt id.
func (a *agent) tool(spec ToolSpec) harness.Tool {
	t := harness.Tool{Name: spec.Name, Effect: effectOf(spec.Kind), Retry: workerRetry,
		Timeout: time.Duration(spec.TimeoutMS) * time.Millisecond, Settle: time.Duration(spec.SettleMS) * time.Millisecond,
		Approvals: spec.Approvals, ApprovalTTL: time.Duration(spec.ApprovalTTLMS) * time.Millisecond}
	t.Func = func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		var b body
		if err := json.Unmarshal(input, &b); err != nil {
			return nil, retryclass.Permanent(err)
		}
		attempt, _ := downstream.AttemptFromContext(ctx)
		key, _ := downstream.KeyFromContext(ctx)
		a.log.Add(Event{Ev: EvAttempt, Intent: b.Intent, P: b.P, Attempt: attempt, Key: key.String(), QuietMS: quietMS(spec)})
		out, err := a.send(ctx, spec.Kind, b, input)
		end := Event{Ev: EvAttemptEnd, Intent: b.Intent, P: b.P, Attempt: attempt}
		if err != nil {
			end.Err = err.Error()
		}
		a.log.Add(end)
		return out, err
	}
	if spec.Kind == Unkeyed && spec.Reconcile != RecNone {
		t.Reconcile = func(ctx context.Context, key uuid.UUID, input json.RawMessage) downstream.Reconciliation {
			var b body
			_ = json.Unmarshal(input, &b)
			out, happened, err := a.reconcile(ctx, spec.Reconcile, b)
			e := Event{Ev: EvReconcile, Intent: b.Intent, P: b.P, Key: key.String(), Output: out, Note: "did not happen"}
			switch {
			case err != nil:
				e.Note, e.Err = "cannot tell", err.Error()
				a.log.Add(e)
				return downstream.CannotTell(err)
			case happened:
				e.Note = "happened"
				a.log.Add(e)
				return downstream.Happened(out)
			}
			a.log.Add(e)
			return downstream.DidNotHappen()
		}
	}
	return t
}

// quietMS is the window an Unkeyed tool declares for each attempt, from
// its start: Timeout + Settle, with the harness's defaults (Timeout
// DefaultUnkeyedTimeout, Settle DefaultSettle). Zero for the other kinds,
// which declare none.
func quietMS(spec ToolSpec) int64 {
	if spec.Kind != Unkeyed {
		return 0
	}
	timeout := time.Duration(spec.TimeoutMS) * time.Millisecond
	if timeout == 0 {
		timeout = harness.DefaultUnkeyedTimeout
	}
	settle := time.Duration(spec.SettleMS) * time.Millisecond
	if settle == 0 {
		settle = harness.DefaultSettle
	}
	return (timeout + max(settle, 0)).Milliseconds()
}

func effectOf(k Kind) journal.Effect {
	switch k {
	case Keyed:
		return journal.Keyed
	case Idempotent:
		return journal.Idempotent
	case ReadOnly:
		return journal.ReadOnly
	}
	return journal.Unkeyed
}

func (a *agent) send(ctx context.Context, kind Kind, b body, input json.RawMessage) (json.RawMessage, error) {
	var req *http.Request
	var err error
	if kind == ReadOnly {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet,
			fmt.Sprintf("%s/read?intent=%s&p=%d", a.plan.Downstream, url.QueryEscape(b.Intent), b.P), nil)
	} else {
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, a.plan.Downstream+"/act", bytes.NewReader(input))
		if req != nil {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	if err != nil {
		return nil, retryclass.Permanent(err)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := retryclass.ResponseError(resp); err != nil {
		return nil, err
	}
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, retryclass.MarkMaybeExecuted(err)
	}
	return out, nil
}

// reconcile asks the downstream whether the intent's effect happened, in
// the manner of the hook.
func (a *agent) reconcile(ctx context.Context, how string, b body) (json.RawMessage, bool, error) {
	switch how {
	case RecCannot:
		return nil, false, errors.New("cannot tell yet")
	case RecSlow:
		select {
		case <-time.After(slowReconcile):
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		a.plan.Downstream+"/effects?intent="+url.QueryEscape(b.Intent), nil)
	if err != nil {
		return nil, false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return nil, false, err
	case resp.StatusCode == http.StatusNotFound:
		return nil, false, nil
	case resp.StatusCode != http.StatusOK:
		return nil, false, fmt.Errorf("reconcile: downstream answered %d", resp.StatusCode)
	}
	return out, true, nil
}
