package main

import (
	"context"
	"fmt"
	"github.com/spf13/pflag"
	"strconv"
	"time"

	"github.com/agentonce/agentonce/journal"
)

var lsCommand = &command{
	name:    "ls",
	args:    "[flags]",
	summary: "list intents, newest first",
	long: `Lists the journal's intents, newest first, with their state and attempt
count. Filters combine; --session (with --turn) and --tool and --state use
the journal's indexes, so listing one session costs the session's size, not
the journal's. --since and --until take RFC 3339 times or durations back
from now (e.g. 2h).

Columns: CREATED KEY TENANT SESSION TURN TOOL STATE ATTEMPTS.`,
	main: withRun(lsCmd, runLs),
}

type lsOptions struct {
	journal      journalFlags
	filter       journal.Filter
	state        string
	since, until string
	limit        int
	json         bool
}

func lsCmd(e *env, fs *pflag.FlagSet, run runFunc[lsOptions]) func(context.Context, []string) error {
	var o lsOptions
	o.journal.register(fs)
	fs.StringVar(&o.filter.Tenant, "tenant", "", "only this `TENANT`")
	fs.StringVar(&o.filter.Session, "session", "", "only this `SESSION`")
	fs.StringVar(&o.filter.Turn, "turn", "", "only this user `TURN` (needs --session)")
	fs.StringVar(&o.filter.Tool, "tool", "", "only this `TOOL`")
	fs.StringVar(&o.state, "state", "", "only this `STATE` (pending, succeeded, failed, suppressed, unknown, awaiting)")
	fs.StringVar(&o.since, "since", "", "only intents created at or after `TIME` (RFC 3339, or a duration ago such as 2h)")
	fs.StringVar(&o.until, "until", "", "only intents created before `TIME` (RFC 3339, or a duration ago)")
	fs.IntVar(&o.limit, "limit", 100, "show at most `N` intents; 0 for all")
	fs.BoolVar(&o.json, "json", false, "print one JSON record per line (see 'agentctl help json')")
	return func(ctx context.Context, pos []string) error {
		var err error
		if len(pos) > 0 {
			return usageErrorf("unexpected argument %q; ls takes only flags", pos[0])
		}
		if o.state != "" {
			if o.filter.State, err = journal.ParseState(o.state); err != nil {
				return usageErrorf("--state: %v", err)
			}
		}
		if o.filter.Since, err = parseTimeFlag(e, "since", o.since); err != nil {
			return err
		}
		if o.filter.Until, err = parseTimeFlag(e, "until", o.until); err != nil {
			return err
		}
		if o.filter.Turn != "" && o.filter.Session == "" {
			return usageErrorf("--turn needs --session")
		}
		if o.limit < 0 {
			return usageErrorf("--limit %d: want 0 (all) or more", o.limit)
		}
		return run(ctx, e, &o)
	}
}

// parseTimeFlag reads an RFC 3339 time or a duration back from now.
func parseTimeFlag(e *env, name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return e.now().Add(-d), nil
	}
	return time.Time{}, usageErrorf("--%s %q: want an RFC 3339 time (2026-01-02T15:04:05Z) or a duration ago (90m)", name, v)
}

func runLs(ctx context.Context, e *env, o *lsOptions) error {
	s, err := o.journal.open(ctx, e, true)
	if err != nil {
		return err
	}
	defer s.Close()

	f := o.filter
	if o.limit > 0 {
		f.Limit = o.limit + 1 // one more, to say whether there are more
	}
	var jw *jsonWriter
	var rw *rowWriter
	if o.json {
		jw = newJSONWriter(e.stdout)
	} else {
		rw = newRowWriter(e.stdout, e.stdoutTTY)
		if e.stdoutTTY {
			rw.row("CREATED", "KEY", "TENANT", "SESSION", "TURN", "TOOL", "STATE", "ATTEMPTS")
		}
	}
	n, more := 0, false
	for r, err := range s.List(ctx, f) {
		if err != nil {
			return err
		}
		if o.limit > 0 && n == o.limit {
			more = true
			break
		}
		n++
		if jw != nil {
			if err := jw.write(&r); err != nil {
				return err
			}
			continue
		}
		created := machineTime(r.Created)
		if e.stdoutTTY {
			created = e.humanTime(r.Created)
		}
		rw.row(created, r.Key.String(), r.Intent.Tenant, r.Intent.Session, r.Intent.Turn,
			r.Intent.Tool, r.State.String(), strconv.Itoa(len(r.Attempts)))
	}
	if jw != nil {
		err = jw.flush()
	} else {
		err = rw.flush()
	}
	if err != nil {
		return err
	}
	if e.stdoutTTY {
		switch {
		case more:
			fmt.Fprintf(e.stderr, "showing the newest %d; --limit 0 shows all\n", n)
		case n == 0:
			fmt.Fprintln(e.stderr, "no intents match")
		}
	}
	return nil
}
