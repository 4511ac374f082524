package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
	"github.com/agentonce/agentonce/retryclass"
)

var replayCommand = &command{
	name:    "replay",
	args:    "--session S [flags]",
	summary: "preview what a restart of a session would do, intent by intent",
	long: `A read-only restart preview. For each recorded intent of the session, oldest
first, says what the harness would do if the agent re-issued the same call
now, from the record's state, lease, expiry and the tool's effect kind:

  answer  answered from the journal; the tool does not run
          (succeeded, suppressed, or failed other than not-executed)
  retry   runs again with the same key: after a crash (pending, lease
          expired) a keyed, idempotent or read-only tool; after an unknown
          outcome a keyed or idempotent tool; any tool whose failure (or
          last attempt) provably did not execute (class not-executed)
  wait    in flight elsewhere: another process holds a live lease; the
          harness waits, then answers "in progress". PostgreSQL journals,
          and a running agent's (read through its socket) only: a bbolt
          journal agentctl can open has no agent, so a live lease belongs
          to a process that stopped, and the restarted agent's open ends it.
          Or an earlier attempt's settle window is open: it may still be
          acting downstream, and nothing runs or is reconciled before the
          window's end, which the reason gives
  block   blocked as unknown: an unkeyed tool whose attempt may have
          happened (or a read-only one recorded unknown); the harness calls
          the tool's Reconcile hook if it has one, else answers unknown
          until an operator runs agentctl resolve
  anew    runs anew: the record is past its TTL, so the call is a new intent

Then a summary. The exit code says what a restart would do: 0 nothing
would execute again and nothing is blocked; 10 something would execute
again; 11 something is blocked (this wins over 10). --at previews a
later moment (leases and TTLs that will have expired by then).`,
	main: withRun(replayCmd, runReplay),
}

type replayOptions struct {
	journal journalFlags
	session string
	tenant  string
	at      string
	json    bool
}

func replayCmd(e *env, fs *pflag.FlagSet, run runFunc[replayOptions]) func(context.Context, []string) error {
	var o replayOptions
	o.journal.register(fs)
	fs.StringVar(&o.session, "session", "", "the `SESSION` to preview (required)")
	fs.StringVar(&o.tenant, "tenant", "", "only this `TENANT`'s intents in the session")
	fs.StringVar(&o.at, "at", "", "preview at `TIME` (RFC 3339) instead of now")
	fs.BoolVar(&o.json, "json", false, "print the preview as one JSON object (see 'agentctl help json')")
	return func(ctx context.Context, pos []string) error {
		if len(pos) > 0 {
			return usageErrorf("unexpected argument %q; replay takes --session S", pos[0])
		}
		if o.session == "" {
			return usageErrorf("--session is required; agentctl ls shows sessions")
		}
		if o.at != "" {
			if _, err := time.Parse(time.RFC3339Nano, o.at); err != nil {
				return usageErrorf("--at %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", o.at)
			}
		}
		return run(ctx, e, &o)
	}
}

// Replay actions, as --json names them.
const (
	actAnswer = "answer"
	actRetry  = "retry"
	actWait   = "wait"
	actBlock  = "block"
	actAnew   = "anew"
)

var replayActions = []string{actAnswer, actRetry, actWait, actBlock, actAnew}

// previewRecord says what a re-issued call of r would do at now, in words.
// The decision is reissue.Of's, from the effect kind the record
// keeps; this function only words it. The reason starts with the verdict.
//
// singleWriter says the journal has one writing process at a time (bbolt,
// whose file lock agentctl could take): then no live owner exists, a live
// lease belongs to a process that stopped, and the store ends such leases
// when the restarted agent opens it for writing.
func previewRecord(r *journal.Record, now time.Time, singleWriter bool) (action, reason string) {
	stopped := "the owner stopped (lease expired)"
	if r.State == journal.StatePending && now.Before(r.Lease.Expires) && singleWriter {
		c := *r
		c.Lease.Expires = now
		r = &c
		stopped = "the owner stopped (no process has the journal open; the restart ends its lease)"
	}
	if r.State == journal.StateAwaiting && !journal.Expired(r, now) {
		return awaitingPreview(r, now)
	}
	why := "the outcome is unknown"
	switch r.State {
	case journal.StatePending:
		why = stopped
	case journal.StateSuppressed:
		why = "the downstream was still processing it (in-flight suppression)"
	}
	switch reissue.Of(r, r.Effect, now) {
	case reissue.Wait:
		if reissue.Settling(r, now) {
			// Nobody holds it: an earlier attempt's settle window is open.
			then := "it runs again with the same key"
			if reissue.Takeover(r, r.Effect) == reissue.Reconcile {
				then = "the tool's Reconcile hook is asked (else agentctl resolve " + r.Key.String() + ")"
			}
			return actWait, "settle window open until " + reissue.QuietAt(r).UTC().Format(time.RFC3339) +
				": an earlier attempt may still be acting downstream, so nothing runs or is reconciled before then; after it, " + then
		}
		return actWait, fmt.Sprintf("in flight elsewhere: %s holds the lease until %s",
			orDash(r.Lease.Owner), r.Lease.Expires.UTC().Format(time.RFC3339))
	case reissue.Anew:
		return actAnew, "runs anew: the record expired at " + r.Expires.UTC().Format(time.RFC3339) + ", so the call is a new intent"
	case reissue.Reconcile:
		return actBlock, "blocked as unknown: " + why + " and the tool is unkeyed; the tool's Reconcile hook decides, else agentctl resolve " + r.Key.String()
	case reissue.Retry:
		switch {
		case r.State == journal.StateFailed:
			return actRetry, "run again with the same key: the failure provably did not execute (not-executed)"
		case lastAttemptNotExecuted(r):
			return actRetry, "run again with the same key: " + why + " and its last attempt provably did not execute"
		case r.Effect == journal.Keyed:
			return actRetry, "retried with the same key: " + why + "; keyed, the downstream absorbs a repeat"
		case r.Effect == journal.ReadOnly:
			return actRetry, "run again: " + why + "; the tool is read-only"
		}
		return actRetry, "run again with the same key: " + why + "; the tool is " + r.Effect.String()
	}
	switch r.State {
	case journal.StateSucceeded:
		return actAnswer, "answered from the journal (succeeded)"
	case journal.StateSuppressed:
		return actAnswer, "answered from the journal (suppressed; the model cannot override it)"
	case journal.StateFailed:
		return actAnswer, "answered from the journal (failed)"
	}
	return actBlock, "blocked: state " + r.State.String() + " is unknown to this agentctl; upgrade it"
}

func lastAttemptNotExecuted(r *journal.Record) bool {
	n := len(r.Attempts)
	return n > 0 && r.Attempts[n-1].Class == retryclass.NotExecuted.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type replayIntentJSON struct {
	Key     string    `json:"key"`
	Tenant  string    `json:"tenant"`
	Turn    string    `json:"turn"`
	Tool    string    `json:"tool"`
	State   string    `json:"state"`
	Effect  string    `json:"effect"`
	Created time.Time `json:"created"`
	Action  string    `json:"action"`
	Reason  string    `json:"reason"`
}

type replayJSON struct {
	Session string             `json:"session"`
	Tenant  string             `json:"tenant"`
	At      time.Time          `json:"at"`
	Intents []replayIntentJSON `json:"intents"`
	Summary map[string]int     `json:"summary"`
}

func runReplay(ctx context.Context, e *env, o *replayOptions) error {
	now := e.now()
	if o.at != "" {
		now, _ = time.Parse(time.RFC3339Nano, o.at)
	}
	s, err := o.journal.open(ctx, e, true)
	if err != nil {
		return err
	}
	defer s.Close()

	// A restart re-issues calls in the order the agent made them.
	recs, err := sessionRecords(ctx, s, o.session, o.tenant)
	if err != nil {
		return err
	}

	out := replayJSON{Session: o.session, Tenant: o.tenant, At: now.UTC(),
		Intents: make([]replayIntentJSON, 0, len(recs)), Summary: map[string]int{}}
	for _, a := range replayActions {
		out.Summary[a] = 0
	}
	for i := range recs {
		r := &recs[i]
		action, reason := previewRecord(r, now, !liveWriters(o.journal.location, s))
		out.Summary[action]++
		out.Intents = append(out.Intents, replayIntentJSON{
			Key: r.Key.String(), Tenant: r.Intent.Tenant, Turn: r.Intent.Turn, Tool: r.Intent.Tool,
			State: r.State.String(), Effect: r.Effect.String(), Created: r.Created.UTC(),
			Action: action, Reason: reason,
		})
	}

	switch {
	case o.json:
		jw := newJSONWriter(e.stdout)
		if err := jw.write(&out); err != nil {
			return err
		}
		if err := jw.flush(); err != nil {
			return err
		}
	case e.stdoutTTY:
		if err := writeReplayHuman(e, &out, recs); err != nil {
			return err
		}
	default:
		rw := newRowWriter(e.stdout, false)
		for _, in := range out.Intents {
			rw.row(in.Action, in.Key, in.Tenant, in.Turn, in.Tool, in.State, in.Effect, in.Reason)
		}
		if err := rw.flush(); err != nil {
			return err
		}
	}
	if len(recs) == 0 {
		return &cliError{code: exitNotFound, err: fmt.Errorf("no intents recorded for session %q%s", o.session, tenantNote(o.tenant)),
			hint: "check --session (agentctl ls shows sessions)"}
	}
	switch {
	case out.Summary[actBlock] > 0:
		return &cliError{code: exitReplayBlock, quiet: true, err: fmt.Errorf("%d intents blocked", out.Summary[actBlock])}
	case out.Summary[actRetry]+out.Summary[actAnew] > 0:
		return &cliError{code: exitReplayRun, quiet: true, err: fmt.Errorf("%d intents would execute again", out.Summary[actRetry]+out.Summary[actAnew])}
	}
	return nil
}

func tenantNote(t string) string {
	if t == "" {
		return ""
	}
	return " of tenant " + strconv.Quote(t)
}

func writeReplayHuman(e *env, out *replayJSON, recs []journal.Record) error {
	fmt.Fprintf(e.stdout, "Restart preview of session %s%s at %s\n\n", escapeField(out.Session), tenantNote(out.Tenant), e.humanTime(out.At))
	rw := newRowWriter(e.stdout, true)
	rw.row("#", "CREATED", "TURN", "TOOL", "KEY", "STATE", "EFFECT", "ON RESTART")
	for i, in := range out.Intents {
		rw.row(strconv.Itoa(i+1), e.humanTime(recs[i].Created), in.Turn, in.Tool, in.Key, in.State, in.Effect, in.Reason)
	}
	if err := rw.flush(); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "\n%d intents: %d answered from the journal, %d retried, %d in flight elsewhere, %d blocked as unknown, %d run anew\n",
		len(out.Intents), out.Summary[actAnswer], out.Summary[actRetry], out.Summary[actWait], out.Summary[actBlock], out.Summary[actAnew])
	switch {
	case out.Summary[actBlock] > 0:
		fmt.Fprintln(e.stdout, "Blocked intents need the tool's Reconcile hook or an operator: agentctl show KEY, then agentctl resolve KEY.")
	case out.Summary[actRetry]+out.Summary[actAnew] > 0:
		fmt.Fprintln(e.stdout, "A restart would execute some intents again (see the table).")
	default:
		fmt.Fprintln(e.stdout, "A restart would execute nothing again.")
	}
	return nil
}
