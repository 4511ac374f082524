package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/spf13/pflag"
	"strconv"
	"strings"
	"time"

	"github.com/agentonce/agentonce/harness/inspect"
)

var tailCommand = &command{
	name:    "tail",
	args:    "[--session S] [--tool T] [--json] [flags]",
	summary: "follow a running agent's calls, attempts, retries and results as they happen",
	long: `Follows the running agent of a bbolt journal through the socket it serves
beside the file (JOURNAL.sock): every step of every call, as it happens —
the write-ahead, each attempt's effect, retries with their delay, waits on
an intent in flight elsewhere, takeovers, reconciliations, outcomes, and
the result the agent was given (status and source).

One line per event: on a terminal, local time, the step, the tool, session
and turn, the key and what happened; otherwise tab-separated fields TIME
KIND TOOL SESSION TURN KEY ATTEMPT TRIES CLASS DELAY_MS STATUS SOURCE
ERROR; with --json one object per line (see 'agentctl help json').

tail runs until interrupted (exit 0) or until the agent closes its journal
(exit 0). An agent that dies mid-stream, or no running agent at all, is
exit 8. A reader too slow for the agent loses events, and is told how many
on standard error: the agent never waits for it.`,
	main: withRun(tailCmd, runTail),
}

type tailOptions struct {
	journal journalFlags
	session string
	tool    string
	json    bool
}

func tailCmd(e *env, fs *pflag.FlagSet, run runFunc[tailOptions]) func(context.Context, []string) error {
	var o tailOptions
	o.journal.register(fs)
	fs.StringVar(&o.session, "session", "", "only this `SESSION`'s calls")
	fs.StringVar(&o.tool, "tool", "", "only this `TOOL`'s calls")
	fs.BoolVar(&o.json, "json", false, "print one JSON event per line (see 'agentctl help json')")
	return func(ctx context.Context, pos []string) error {
		if len(pos) > 0 {
			return usageErrorf("unexpected argument %q; tail takes only flags", pos[0])
		}
		return run(ctx, e, &o)
	}
}

func runTail(ctx context.Context, e *env, o *tailOptions) error {
	if err := o.journal.resolve(e); err != nil {
		return err
	}
	if isRemote(o.journal.location) {
		return usageErrorf("tail follows the agent of a bbolt journal; agents on PostgreSQL or Redis serve no socket (use their Observer or logs)")
	}
	if err := checkBoltFile(o.journal.location); err != nil {
		return err
	}
	sock := inspect.SocketPath(o.journal.location)
	c, err := inspect.Dial(ctx, sock)
	if errors.Is(err, inspect.ErrNoAgent) {
		return &cliError{code: exitAgentGone, err: fmt.Errorf("no running agent serves journal %s (nothing answers at %s)", o.journal.location, sock),
			hint: "start the agent; tail follows a running agent, and an agent whose inspection is off cannot be followed"}
	}
	if err != nil {
		return agentError(o.journal.location, err)
	}
	defer c.Close()
	if e.stderrTTY {
		fmt.Fprintf(e.stderr, "following the agent of %s (pid %d); Ctrl-C stops\n", o.journal.location, c.Info().PID)
	}
	jw := newJSONWriter(e.stdout)
	err = c.Events(ctx, nil, func(ev inspect.Event) error {
		if (o.session != "" && ev.Session != o.session) || (o.tool != "" && ev.Tool != o.tool) {
			return nil
		}
		if o.json {
			if err := jw.write(&ev); err != nil {
				return err
			}
			return jw.flush()
		}
		_, err := fmt.Fprintln(e.stdout, tailLine(e, &ev))
		return err
	}, func(n int) {
		fmt.Fprintf(e.stderr, "agentctl tail: %d events lost: this reader fell behind the agent\n", n)
	})
	switch {
	case err == nil:
		if e.stderrTTY {
			fmt.Fprintln(e.stderr, "the agent closed its journal")
		}
		return nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return nil // interrupted: the way tail is meant to end
	}
	return err
}

// tailLine renders one event: aligned words on a terminal, else
// tab-separated fields in a fixed order.
func tailLine(e *env, ev *inspect.Event) string {
	delay := ""
	if ev.DelayMS > 0 {
		delay = strconv.FormatInt(ev.DelayMS, 10)
	}
	if !e.stdoutTTY {
		fields := []string{machineTime(ev.Time), ev.Kind, ev.Tool, ev.Session, ev.Turn, ev.Key, ev.Attempt,
			strconv.Itoa(ev.Attempts), ev.Class, delay, ev.Status, ev.Source, ev.Error}
		for i, f := range fields {
			fields[i] = escapeField(f)
		}
		return strings.Join(fields, "\t")
	}
	var what []string
	if ev.Status != "" {
		s := ev.Status
		if ev.Source != "" {
			s += " (" + ev.Source + ")"
		}
		what = append(what, s)
	}
	what = append(what, "attempts="+strconv.Itoa(ev.Attempts))
	if ev.Class != "" {
		what = append(what, "class="+ev.Class)
	}
	if ev.DelayMS > 0 {
		what = append(what, "wait="+(time.Duration(ev.DelayMS)*time.Millisecond).String())
	}
	if ev.Error != "" {
		what = append(what, "error="+quoteShort(ev.Error))
	}
	return fmt.Sprintf("%s  %-18s  %-16s  %s/%s  %s  %s", ev.Time.In(e.loc).Format("15:04:05.000"), ev.Kind,
		escapeField(ev.Tool), escapeField(ev.Session), escapeField(ev.Turn), ev.Key, escapeField(strings.Join(what, " ")))
}

// quoteShort quotes an error on one line, cut to a readable length.
func quoteShort(s string) string {
	const max = 120
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strconv.Quote(s)
}
