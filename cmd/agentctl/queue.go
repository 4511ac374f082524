package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
)

var queueCommand = &command{
	name:    "queue",
	args:    "[--tenant T] [--limit N] [--json]",
	summary: "list every intent that needs a person, oldest first",
	long: `One list of what needs a person on this journal, oldest first, across
sessions and both ends of the wire (an agent's tool calls and the requests
of a server's idempotency middleware, told apart as resolve tells them):

  resolve  the outcome is unknown and nothing will settle it on its own:
           an unknown intent, or a pending one whose owner stopped (its
           lease expired; on a bbolt file agentctl could open, no process
           has it). Check the downstream, then run one of the two commands
           shown: it happened (--succeeded) or it did not (--failed).
  reissue  the downstream answered that it was still processing the call
           (an in-flight suppression): resolve cannot settle it; the
           agent's next call of it reconciles or retries it.

An intent whose settle window is still open (an attempt may still be
acting downstream), or whose owner holds a live lease, is not listed: it
is in progress, not waiting for anyone.

Each intent shows its age, who made it (tenant, session, turn and tool; a
server's request: its route and the client's idempotency key), why it
waits, and the commands that settle it, each runnable as shown once its
result or reason is filled in. --limit bounds the list (the oldest N; 0
for all); the count of the rest goes to stderr.

The exit code is 0 when nothing needs a person and 12 when something does,
so that a cron job or a probe can alert on it.`,
	main: withRun(queueCmd, runQueue),
}

// defaultQueueLimit is queue's --limit: a page a person reads at once.
const defaultQueueLimit = 50

type queueOptions struct {
	journal journalFlags
	tenant  string
	limit   int
	json    bool
}

func queueCmd(e *env, fs *pflag.FlagSet, run runFunc[queueOptions]) func(context.Context, []string) error {
	var o queueOptions
	o.journal.register(fs)
	fs.StringVar(&o.tenant, "tenant", "", "only this `TENANT`")
	fs.IntVar(&o.limit, "limit", defaultQueueLimit, "list at most the oldest `N`; 0 for all")
	fs.BoolVar(&o.json, "json", false, "print one JSON object per intent (see 'agentctl help json')")
	return func(ctx context.Context, pos []string) error {
		if len(pos) > 0 {
			return usageErrorf("unexpected argument %q; queue takes only flags", pos[0])
		}
		if o.limit < 0 {
			return usageErrorf("--limit %d: want 0 (all) or more", o.limit)
		}
		return run(ctx, e, &o)
	}
}

// What an intent in the queue needs of a person (queueItem.Needs).
const (
	needResolve = "resolve" // say whether it happened: agentctl resolve
	needReissue = "reissue" // the agent's next call settles it
	needApprove = "approve" // may it run? (an intent awaiting approval)
)

// questions is what each need asks the person, as the text output says it.
var questions = map[string]string{
	needResolve: "did it happen?",
	needReissue: "nothing to resolve: the agent's next call of it settles it",
	needApprove: "may it run?",
}

// queueStates are the states whose intents may need a person, each with
// the rule that says whether one does at now.
var queueStates = []struct {
	state journal.State
	need  func(r *journal.Record, now time.Time, live, server bool) (need, why string)
}{
	{journal.StateUnknown, outcomeNeed},
	{journal.StatePending, outcomeNeed},
	{journal.StateSuppressed, outcomeNeed},
	{journal.StateAwaiting, approvalNeed},
}

// approvalNeed says whether r, awaiting approval, waits for approvers at
// now: not once approved (its next call runs it) nor past its deadline
// (its next call suppresses it).
func approvalNeed(r *journal.Record, now time.Time, _, _ bool) (need, why string) {
	a := r.Approval
	if a == nil || len(a.Given) >= a.Need || !now.Before(a.Deadline) {
		return "", ""
	}
	return needApprove, fmt.Sprintf("it needs %d approval(s), %d given, by %s; nothing has run",
		a.Need, len(a.Given), a.Deadline.UTC().Format(time.RFC3339))
}

// outcomeNeed says whether r, whose outcome is not known, waits for a
// person at now, and why: "" when it is in progress (a live owner's lease
// when live says the journal has other writers, or an open settle window)
// or settled. server says r is a request of the idempotency middleware.
func outcomeNeed(r *journal.Record, now time.Time, live, server bool) (need, why string) {
	switch {
	case r.State == journal.StateSuppressed && r.ErrorClass != journal.ClassInFlight:
		return "", "" // a settled answer (a mismatch, an operator's)
	case r.State == journal.StatePending && live && now.Before(r.Lease.Expires):
		return "", "" // in flight in a live process
	case now.Before(reissue.QuietAt(r)):
		return "", "" // an attempt may still be acting downstream
	}
	switch r.State {
	case journal.StateSuppressed:
		return needReissue, "the downstream was still processing it (in-flight suppression); " + reissueNote(r, server)
	case journal.StatePending:
		why = "its owner " + orDash(r.Lease.Owner) + " stopped mid-call (lease expired " + r.Lease.Expires.UTC().Format(time.RFC3339) + ")"
		if !live {
			why = "its owner " + orDash(r.Lease.Owner) + " stopped mid-call (no process has the journal open)"
		}
		return needResolve, why + "; " + reissueNote(r, server)
	}
	why = "the outcome is unknown"
	if r.ErrorClass != "" || r.ErrorMessage != "" {
		why += " (" + strings.TrimPrefix(r.ErrorClass+": "+r.ErrorMessage, ": ") + ")"
	}
	return needResolve, why + "; " + reissueNote(r, server)
}

// reissueNote says what a call of r made again does meanwhile; server
// says r is a request of the idempotency middleware.
func reissueNote(r *journal.Record, server bool) string {
	switch {
	case server:
		return "every retry with its key is answered 500 outcome-unknown"
	case reissue.Takeover(r, r.Effect) == reissue.Retry:
		return "a call of it again retries it under its key"
	}
	return "a call of it again asks the tool's Reconcile hook, else stays unknown"
}

// queueItem is one intent in the queue, as queue --json prints it.
type queueItem struct {
	Key        string          `json:"key"`
	Created    time.Time       `json:"created"`
	AgeSeconds int64           `json:"age_seconds"`
	End        string          `json:"end"` // "agent" or "server"
	Tenant     string          `json:"tenant"`
	Session    string          `json:"session"` // a server's: the client's idempotency key
	Turn       string          `json:"turn"`
	Tool       string          `json:"tool"` // a server's: its method and route
	State      string          `json:"state"`
	Needs      string          `json:"needs"`
	Why        string          `json:"why"`
	Commands   []settleCommand `json:"commands"`
}

// settleCommand is a command that settles an intent, and when to run it.
type settleCommand struct {
	When    string `json:"when"`
	Command string `json:"command"`
}

// settleCommands are the commands that settle the intent key of the
// journal at journalLoc: it happened (for a server's request, with a
// status and body to replay) or it did not. Each runs as shown; the
// result, answer or reason is the operator's to fill in.
func settleCommands(journalLoc, key string, server bool) []settleCommand {
	base := "agentctl --journal " + shellQuote(commandJournal(journalLoc)) + " resolve " + key
	happened := settleCommand{"it happened: the tool's result as JSON", base + " --succeeded --output '{}'"}
	if server {
		happened = settleCommand{"it happened: the answer every retry gets, its status, headers (--header 'NAME: VALUE') and body",
			base + " --succeeded --status 200 --body '{}'"}
	}
	return []settleCommand{happened, {"it did not happen", base + " --failed --reason 'not done downstream'"}}
}

// decideCommands are the commands that approve or reject an intent
// awaiting approval, the approval naming its input's fingerprint.
func decideCommands(journalLoc, key, fp string) []settleCommand {
	base := "agentctl --journal " + shellQuote(commandJournal(journalLoc))
	return []settleCommand{
		{"it may run: approve this input", base + " approve " + key + " --fingerprint " + fp + " --reason 'checked'"},
		{"it must not run", base + " reject " + key + " --reason 'not approved'"}}
}

// queueCollector keeps the oldest limit items of those added (all when
// limit is 0), and counts every one.
type queueCollector struct {
	limit int
	items []queueItem
	total int
}

func (q *queueCollector) add(it queueItem) {
	q.total++
	q.items = append(q.items, it)
	if q.limit > 0 && len(q.items) >= 2*q.limit {
		q.items = q.oldest()
	}
}

// oldest sorts the items oldest first and keeps the first limit.
func (q *queueCollector) oldest() []queueItem {
	slices.SortFunc(q.items, func(a, b queueItem) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Key, b.Key))
	})
	if q.limit > 0 && len(q.items) > q.limit {
		return q.items[:q.limit:q.limit]
	}
	return q.items
}

func runQueue(ctx context.Context, e *env, o *queueOptions) error {
	s, err := o.journal.open(ctx, e, true)
	if err != nil {
		return err
	}
	defer s.Close()

	now := e.now()
	live := liveWriters(o.journal.location, s)
	ns := s.Namespace()
	q := queueCollector{limit: o.limit}
	for _, qs := range queueStates {
		for r, err := range s.List(ctx, journal.Filter{Tenant: o.tenant, State: qs.state}) {
			if err != nil {
				return err
			}
			server := serverRecord(ns, &r)
			need, why := qs.need(&r, now, live, server)
			if need == "" {
				continue
			}
			it := queueItem{Key: r.Key.String(), Created: r.Created.UTC(), AgeSeconds: int64(now.Sub(r.Created) / time.Second),
				End: "agent", Tenant: r.Intent.Tenant, Session: r.Intent.Session, Turn: r.Intent.Turn, Tool: r.Intent.Tool,
				State: r.State.String(), Needs: need, Why: why}
			if server {
				it.End = "server"
			}
			switch need {
			case needResolve:
				it.Commands = settleCommands(o.journal.location, it.Key, server)
			case needApprove:
				it.Commands = decideCommands(o.journal.location, it.Key, r.Fingerprint.String())
			}
			q.add(it)
		}
	}
	items := q.oldest()
	if err := writeQueue(e, o.json, now, items); err != nil {
		return err
	}
	if q.total > len(items) {
		fmt.Fprintf(e.stderr, "%d intents need a person; showing the oldest %d (--limit 0 shows all)\n", q.total, len(items))
	}
	if q.total > 0 {
		return &cliError{code: exitQueued, quiet: true, err: fmt.Errorf("%d intents need a person", q.total)}
	}
	if e.stdoutTTY {
		fmt.Fprintln(e.stderr, "nothing needs a person")
	}
	return nil
}

// writeQueue prints items: JSON lines, a block per intent on a terminal,
// else one tab-separated line per intent.
func writeQueue(e *env, asJSON bool, now time.Time, items []queueItem) error {
	switch {
	case asJSON:
		jw := newJSONWriter(e.stdout)
		for i := range items {
			if err := jw.write(&items[i]); err != nil {
				return err
			}
		}
		return jw.flush()
	case e.stdoutTTY:
		return writeQueueHuman(e.stdout, now, items)
	}
	rw := newRowWriter(e.stdout, false)
	for _, it := range items {
		row := []string{machineTime(it.Created), strconv.FormatInt(it.AgeSeconds, 10), it.Key, it.End,
			it.Tenant, it.Session, it.Turn, it.Tool, it.State, it.Needs, it.Why}
		for _, c := range it.Commands {
			row = append(row, c.Command)
		}
		rw.row(row...)
	}
	return rw.flush()
}

// writeQueueHuman prints one block per intent: what it is, why it waits,
// and the commands that settle it, each with when to run it.
func writeQueueHuman(w io.Writer, now time.Time, items []queueItem) error {
	var b strings.Builder
	for i, it := range items {
		who := it.Tenant + " / session " + it.Session + " / turn " + it.Turn + " / " + it.Tool
		if it.End == "server" {
			who = it.Tenant + " / " + it.Tool + " / idempotency key " + it.Session
		}
		fmt.Fprintf(&b, "%d. %s %s, %s for %s: %s\n", i+1, it.End, it.Key, it.State,
			shortDuration(now.Sub(it.Created)), escapeText(strings.TrimPrefix(who, " / ")))
		fmt.Fprintf(&b, "   %s: %s\n   why: %s\n", it.Needs, questions[it.Needs], escapeText(it.Why))
		for _, c := range it.Commands {
			fmt.Fprintf(&b, "     %s   # %s\n", c.Command, c.When)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
