package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/pflag"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

var resolveCommand = &command{
	name:    "resolve",
	args:    "KEY --succeeded [--output JSON | --status CODE [--header 'NAME: VALUE']... [--body TEXT|@FILE]] | KEY --failed --reason TEXT",
	summary: "settle an intent whose outcome is unknown",
	long: `An operator's verdict on an intent whose outcome is unknown (or pending after
its owner died): after checking the downstream, record that the effect
happened (--succeeded, with the tool's result as --output if the agent
should see one) or that it did not (--failed, with --reason). The record
keeps who (--by, default $USER@hostname), when and why; a re-issued call
is then answered from the journal.

A record of the idempotency middleware (a server's request) can be given
its first answer back: --status, with --header (repeated, as curl -H) and
--body (the bytes as given, or @FILE's), is what every retry with the key
then gets, byte for byte, marked replayed. A JSON body without a
Content-Type header is sent as application/json. With --output instead, a
retry gets 200 with the output. On an agent's record the three are refused.

On PostgreSQL, or through the socket of a running agent, a pending intent
whose lease is still live is in flight in another process: resolving it
would fence that process out mid-call, so it is refused unless --force. (A
bbolt journal that agentctl can open for writing has no agent.) Settled
intents (succeeded, failed, suppressed) cannot be resolved.`,
	main: withRun(resolveCmd, runResolve),
}

type resolveOptions struct {
	journal    journalFlags
	key        keyArg
	succeeded  bool
	failed     bool
	output     string
	status     int
	headers    []string
	body       string
	answer     []byte // the middleware's stored response, from --status
	answerNote string // what it is, for the operator
	reason     string
	by         string
	force      bool
}

func resolveCmd(e *env, fs *pflag.FlagSet, run runFunc[resolveOptions]) func(context.Context, []string) error {
	var o resolveOptions
	o.journal.register(fs)
	fs.BoolVar(&o.succeeded, "succeeded", false, "the effect happened: settle as succeeded")
	fs.BoolVar(&o.failed, "failed", false, "the effect did not happen: settle as failed (needs --reason)")
	fs.StringVar(&o.output, "output", "", "the tool's result as `JSON`, for --succeeded")
	fs.IntVar(&o.status, "status", 0, "a server's answer: its status `CODE` (200–599), for --succeeded")
	fs.StringArrayVar(&o.headers, "header", nil, "a server's answer: a header `'NAME: VALUE'` (repeat for more), with --status")
	fs.Lookup("header").DefValue = "" // none: not "[]" in the help
	fs.StringVar(&o.body, "body", "", "a server's answer: its body as `TEXT`, or @FILE for a file's bytes, with --status")
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
		case o.output != "" && strings.HasPrefix(o.output, "agentonce-http/1 "):
			return usageErrorf("--output holds a server's stored response: give its parts as --status CODE, --header 'NAME: VALUE' and --body")
		case o.output != "" && !json.Valid([]byte(o.output)):
			return usageErrorf("--output is not valid JSON")
		}
		if o.answer, err = serverAnswer(fs, &o); err != nil {
			return err
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
	if o.answer != nil && !serverRecord(s.Namespace(), &r) {
		return usageErrorf("intent %s is an agent's tool call (%s), not a request to the idempotency middleware: --status, --header and --body restore a server's answer; an agent's result is --output JSON", key, orDash(r.Intent.Tool))
	}
	res := journal.Resolution{State: journal.StateFailed, Reason: o.reason, By: o.by}
	if o.succeeded {
		res.State = journal.StateSucceeded
		if o.output != "" {
			res.Output = []byte(o.output)
		}
		if o.answer != nil {
			res.Output = o.answer
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
	if o.answer != nil {
		fmt.Fprintf(e.stdout, "a retry with its key is answered %s\n", o.answerNote)
	}
	return nil
}

// serverAnswer returns the middleware's stored response that --status,
// --header and --body make (nil without --status), or a usage error
// naming what is wrong with them.
func serverAnswer(fs *pflag.FlagSet, o *resolveOptions) ([]byte, error) {
	server := fs.Changed("status")
	switch {
	case !server && (fs.Changed("header") || fs.Changed("body")):
		return nil, usageErrorf("--header and --body are parts of a server's answer: give its status too (--status CODE)")
	case !server:
		return nil, nil
	case o.failed:
		return nil, usageErrorf("--status, --header and --body give the answer of a request that happened: they go with --succeeded, not --failed")
	case o.output != "":
		return nil, usageErrorf("pass either --output (an agent's result) or --status with --header and --body (a server's answer), not both")
	}
	body := []byte(o.body)
	if name, ok := strings.CutPrefix(o.body, "@"); ok {
		var err error
		if body, err = os.ReadFile(name); err != nil {
			return nil, usageErrorf("--body @%s: %v", name, err)
		}
	}
	if len(body) > idempotency.DefaultMaxStoredBytes {
		return nil, usageErrorf("--body is %d bytes, over the %d the middleware keeps in a record (DefaultMaxStoredBytes)", len(body), idempotency.DefaultMaxStoredBytes)
	}
	h := http.Header{}
	for _, line := range o.headers {
		name, value, ok := strings.Cut(line, ":")
		if name = strings.TrimSpace(name); !ok || name == "" {
			return nil, usageErrorf("--header %q: want 'NAME: VALUE', as Location: /v1/charges/ch_1", line)
		}
		if strings.EqualFold(name, "Content-Length") {
			return nil, usageErrorf("--header %q: a replay sends the body's own Content-Length, leave it out", line)
		}
		h.Add(name, strings.Trim(value, " \t"))
	}
	if h.Get("Content-Type") == "" && len(body) > 0 && json.Valid(body) {
		h.Set("Content-Type", "application/json")
	}
	out, err := idempotency.ResolvedResponse(o.status, h, body)
	if err != nil {
		return nil, usageErrorf("--status or --header: %v", err)
	}
	names := slices.Sorted(maps.Keys(h))
	o.answerNote = fmt.Sprintf("%d, headers %s, %d bytes of body", o.status, orDash(strings.Join(names, ", ")), len(body))
	return out, nil
}

// middlewareStepTag begins the step key of every record the idempotency
// middleware writes (docs/server.md, "Scope").
const middlewareStepTag = "agentonce/idempotency/v1\n"

// serverRecord reports whether r is the idempotency middleware's: its key
// is the one the middleware derives, under the journal's secret namespace,
// from the tenant, the method and route (the Tool) and the client's key
// (the Session). An agent's record, keyed from its input, cannot match.
func serverRecord(ns uuid.UUID, r *journal.Record) bool {
	step := middlewareStepTag + r.Intent.Tool + "\n" + r.Intent.Session
	return r.Intent.Turn == "" && keyderive.ExplicitKey(ns, r.Intent.Tenant, step) == r.Key
}
