package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

var approveCommand = &command{
	name:    "approve",
	args:    "KEY --fingerprint HEX [--reason TEXT] [--by WHO]",
	summary: "approve an intent that awaits approval, for the input you checked",
	long: `Approves an intent that must be approved before it runs. --fingerprint is the
fingerprint of the input you approve, as agentctl show KEY prints it beside
the input: an approval of another input is refused, so what you read is
what runs. The record keeps who (--by, default $USER@hostname), when and
why (--reason). Once the approvals it needs are given, the intent runs the
next time its call is made, once. An approver counts once; past its
deadline an intent can no longer be approved.`,
	main: withRun(approveCmd, runDecide),
}

var rejectCommand = &command{
	name:    "reject",
	args:    "KEY --reason TEXT [--by WHO]",
	summary: "reject an intent that awaits approval: it never runs",
	long: `Rejects an intent that must be approved before it runs: it is suppressed,
and its call is answered with the rejection, who decided (--by, default
$USER@hostname) and why (--reason, required). One rejection is enough,
whatever the approvals given so far.`,
	main: withRun(rejectCmd, runDecide),
}

// decideOptions are an approval's or a rejection's.
type decideOptions struct {
	journal     journalFlags
	key         keyArg
	approve     bool
	fingerprint keyderive.Fingerprint // approve only
	reason      string
	by          string
}

func approveCmd(e *env, fs *pflag.FlagSet, run runFunc[decideOptions]) func(context.Context, []string) error {
	o := decideOptions{approve: true}
	var fp string
	fs.StringVar(&fp, "fingerprint", "", "the fingerprint of the input you approve, `HEX` as agentctl show prints it (required)")
	return decideFlags(e, fs, &o, run, func() error {
		var err error
		o.fingerprint, err = parseFingerprint(fp)
		return err
	})
}

func rejectCmd(e *env, fs *pflag.FlagSet, run runFunc[decideOptions]) func(context.Context, []string) error {
	var o decideOptions
	return decideFlags(e, fs, &o, run, func() error {
		if o.reason == "" {
			return usageErrorf("reject needs --reason TEXT saying why it must not run")
		}
		return nil
	})
}

// decideFlags registers the flags approve and reject share and returns
// what checks them (and check's own) and runs.
func decideFlags(e *env, fs *pflag.FlagSet, o *decideOptions, run runFunc[decideOptions], check func() error) func(context.Context, []string) error {
	o.journal.register(fs)
	fs.StringVar(&o.reason, "reason", "", "`TEXT` saying why")
	fs.StringVar(&o.by, "by", "", "`WHO` decides (default $USER@hostname)")
	return func(ctx context.Context, pos []string) error {
		var err error
		if len(pos) != 1 {
			return usageErrorf("want exactly one KEY, got %d arguments; agentctl ls --state awaiting lists them", len(pos))
		}
		if o.key, err = parseKeyArg(pos[0]); err != nil {
			return err
		}
		if err := check(); err != nil {
			return err
		}
		if o.by == "" {
			o.by = e.user()
		}
		return run(ctx, e, o)
	}
}

// parseFingerprint reads --fingerprint: all of its hex digits, so that an
// approval is never of a near miss.
func parseFingerprint(s string) (keyderive.Fingerprint, error) {
	var fp keyderive.Fingerprint
	b, err := hex.DecodeString(s)
	switch {
	case s == "":
		return fp, usageErrorf("approve needs --fingerprint HEX: the fingerprint of the input you approve (agentctl show KEY prints it)")
	case err != nil || len(b) != len(fp):
		return fp, usageErrorf("--fingerprint %q: want the %d hex digits agentctl show KEY prints", s, 2*len(fp))
	}
	copy(fp[:], b)
	return fp, nil
}

// runDecide records an approval or a rejection, on every store: a bbolt
// file, through the socket of the process that holds it, or a server.
func runDecide(ctx context.Context, e *env, o *decideOptions) error {
	s, err := o.journal.open(ctx, e, false)
	if err != nil {
		return err
	}
	defer s.Close()
	r, err := o.key.record(ctx, s)
	if err != nil {
		return err
	}
	if err := decisionConflict(e.now(), &r, o); err != nil {
		return err
	}
	res := journal.Resolution{State: journal.StateSuppressed, Reason: o.reason, By: o.by}
	if o.approve {
		res.State, res.Fingerprint = journal.StatePending, o.fingerprint
	}
	done, err := s.Resolve(ctx, r.Key, res)
	if errors.Is(err, journal.ErrNotResolvable) || errors.Is(err, journal.ErrInvalid) {
		// Decided by someone else since it was read, or past the store's
		// own clock's deadline: the store's error says which.
		return &cliError{code: exitConflict, err: err, hint: "agentctl show KEY shows where it stands"}
	}
	if err != nil {
		return err
	}
	writeDecision(e.stdout, &done, o)
	return nil
}

// decisionConflict says why the record read cannot take the decision
// (exit 7), before it is asked of the store; nil when it can.
func decisionConflict(now time.Time, r *journal.Record, o *decideOptions) error {
	conflict := func(hint, format string, args ...any) error {
		return &cliError{code: exitConflict, err: fmt.Errorf("intent %s "+format, append([]any{r.Key}, args...)...), hint: hint}
	}
	a := r.Approval
	switch {
	case r.State != journal.StateAwaiting:
		return conflict("only an intent that awaits approval can be approved or rejected (agentctl show KEY)", "is %s, not awaiting approval%s", r.State, decidedNote(r))
	case !now.Before(a.Deadline):
		return conflict("its call must ask again", "can no longer be decided: its approval deadline %s has passed", a.Deadline.UTC().Format(time.RFC3339))
	case len(a.Given) >= a.Need:
		return conflict("it runs the next time its call is made", "is already approved (%d of %d)%s", len(a.Given), a.Need, decidedNote(r))
	case o.approve && o.fingerprint != r.Fingerprint:
		return conflict("agentctl show KEY prints its input and fingerprint: read the input, then approve that fingerprint",
			"has input %s, not %s: an approval runs only the input it names", r.Fingerprint, o.fingerprint)
	case o.approve && slices.ContainsFunc(a.Given, func(g journal.Resolution) bool { return g.By == o.by }):
		return conflict("another approver must approve it", "is already approved by %q; it needs %d distinct approvers", o.by, a.Need)
	}
	return nil
}

// decidedNote names who decided a record that was awaiting approval.
func decidedNote(r *journal.Record) string {
	switch {
	case r.Approval == nil:
		return ""
	case r.Resolution != nil && r.Resolution.State == journal.StateSuppressed:
		return fmt.Sprintf(" (rejected by %s: %s)", r.Resolution.By, r.Resolution.Reason)
	case r.ErrorClass != "" && r.State == journal.StateSuppressed:
		return " (" + r.ErrorClass + ")"
	}
	var by []string
	for _, g := range r.Approval.Given {
		by = append(by, g.By)
	}
	return " (approved by " + orDash(strings.Join(by, ", ")) + ")"
}

// writeDecision says what was recorded and what happens next.
func writeDecision(w io.Writer, r *journal.Record, o *decideOptions) {
	if !o.approve {
		fmt.Fprintf(w, "rejected %s by %s: it never runs\n", r.Key, o.by)
		return
	}
	a := r.Approval
	fmt.Fprintf(w, "approved %s by %s (%d of %d) for input %s\n", r.Key, o.by, len(a.Given), a.Need, o.fingerprint)
	if len(a.Given) < a.Need {
		fmt.Fprintf(w, "it waits for %d more approver(s) until %s\n", a.Need-len(a.Given), a.Deadline.UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintln(w, "it runs the next time its call is made, once")
	}
}

// awaitingPreview is what a re-issue of r, awaiting approval, does now
// (previewRecord): nothing before it is approved, the run once it is,
// and a suppression past its deadline.
func awaitingPreview(r *journal.Record, now time.Time) (action, reason string) {
	a := r.Approval
	deadline := a.Deadline.UTC().Format(time.RFC3339)
	switch {
	case !now.Before(a.Deadline):
		return actAnswer, "suppressed when called (approval-expired): its approval deadline " + deadline + " passed"
	case len(a.Given) >= a.Need:
		return actRetry, fmt.Sprintf("runs once when called: approved (%d of %d)%s", len(a.Given), a.Need, decidedNote(r))
	}
	return actWait, fmt.Sprintf("awaits approval (%d of %d given) until %s: agentctl approve %s --fingerprint %s, or agentctl reject",
		len(a.Given), a.Need, deadline, r.Key, r.Fingerprint)
}
