package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/spf13/pflag"
	"time"

	"github.com/agentonce/agentonce/journal"
)

var resolveCommand = &command{
	name:    "resolve",
	args:    "KEY --succeeded [--output JSON] | KEY --failed --reason TEXT",
	summary: "settle an intent whose outcome is unknown",
	long: `An operator's verdict on an intent whose outcome is unknown (or pending after
its owner died): after checking the downstream, record that the effect
happened (--succeeded, with the tool's result as --output if the agent
should see one) or that it did not (--failed, with --reason). The record
keeps who (--by, default $USER@hostname), when and why; a re-issued call
is then answered from the journal.

On PostgreSQL, or through the socket of a running agent, a pending intent
whose lease is still live is in flight in another process: resolving it
would fence that process out mid-call, so it is refused unless --force. (A
bbolt journal that agentctl can open for writing has no agent.) Settled intents (succeeded, failed, suppressed) cannot be
resolved.`,
	main: withRun(resolveCmd, runResolve),
}

type resolveOptions struct {
	journal   journalFlags
	key       keyArg
	succeeded bool
	failed    bool
	output    string
	reason    string
	by        string
	force     bool
}

func resolveCmd(e *env, fs *pflag.FlagSet, run runFunc[resolveOptions]) func(context.Context, []string) error {
	var o resolveOptions
	o.journal.register(fs)
	fs.BoolVar(&o.succeeded, "succeeded", false, "the effect happened: settle as succeeded")
	fs.BoolVar(&o.failed, "failed", false, "the effect did not happen: settle as failed (needs --reason)")
	fs.StringVar(&o.output, "output", "", "the tool's result as `JSON`, for --succeeded")
	fs.StringVar(&o.reason, "reason", "", "`TEXT` saying why (required with --failed)")
	fs.StringVar(&o.by, "by", "", "`WHO` resolves it (default $USER@hostname)")
	fs.BoolVar(&o.force, "force", false, "resolve a pending intent even though its lease is live")
	return func(ctx context.Context, pos []string) error {
		var err error
		if len(pos) != 1 {
			return usageErrorf("want exactly one KEY, got %d arguments", len(pos))
		}
		if o.key, err = parseKeyArg(pos[0]); err != nil {
			return err
		}
		switch {
		case o.succeeded == o.failed:
			return usageErrorf("pass exactly one of --succeeded or --failed")
		case o.failed && o.reason == "":
			return usageErrorf("--failed needs --reason TEXT saying why the effect did not happen")
		case o.failed && o.output != "":
			return usageErrorf("--output goes with --succeeded, not --failed")
		case o.output != "" && !json.Valid([]byte(o.output)):
			return usageErrorf("--output is not valid JSON")
		}
		if o.by == "" {
			o.by = e.user()
		}
		return run(ctx, e, &o)
	}
}

func runResolve(ctx context.Context, e *env, o *resolveOptions) error {
	s, err := o.journal.open(ctx, e, false)
	if err != nil {
		return err
	}
	defer s.Close()

	r, err := o.key.record(ctx, s)
	if err != nil {
		return err
	}
	key := r.Key
	// Only PostgreSQL has other live writers: a bbolt journal that agentctl
	// opened for writing has no other process, so a live lease there is a
	// stopped process's.
	if liveWriters(o.journal.location, s) && r.State == journal.StatePending && e.now().Before(r.Lease.Expires) && !o.force {
		return &cliError{code: exitConflict,
			err: fmt.Errorf("intent %s is in flight: %s holds its lease until %s", key, orDash(r.Lease.Owner),
				r.Lease.Expires.UTC().Format(time.RFC3339)),
			hint: "wait for it to finish or its lease to expire, or pass --force to fence the owner out"}
	}
	res := journal.Resolution{State: journal.StateFailed, Reason: o.reason, By: o.by}
	if o.succeeded {
		res.State = journal.StateSucceeded
		if o.output != "" {
			res.Output = []byte(o.output)
		}
	}
	done, err := s.Resolve(ctx, key, res)
	if err != nil {
		if errors.Is(err, journal.ErrNotResolvable) {
			return &cliError{code: exitConflict,
				err:  fmt.Errorf("intent %s is already settled as %s: %w", key, r.State, err),
				hint: "only pending or unknown intents can be resolved (agentctl show KEY)"}
		}
		return err
	}
	fmt.Fprintf(e.stdout, "resolved %s as %s by %s\n", key, done.State, o.by)
	return nil
}
