package main

import (
	"context"
	"fmt"
	"github.com/spf13/pflag"
	"os"
)

var timelineCommand = &command{
	name:    "timeline",
	args:    "--session S [flags]",
	summary: "draw a session's intents and attempts against time (text, or an HTML page)",
	long: `One row per recorded intent of the session, oldest first: its tool, status and
key, and each attempt as a bar on a time axis shared by all rows, coloured by
the attempt's class (success, not-executed, maybe-executed, in-flight,
mismatch, terminal, canceled; a running attempt, or one whose owner stopped,
is drawn open). Waits on an intent in flight downstream (a 409), retries,
suppressions and operator resolutions are marked; an unknown or blocked
intent stands out. The last column is what a re-issue would do now, as
agentctl replay says it. Long idle stretches are cut out of the axis and
labelled with their length.

--html FILE writes one self-contained HTML page (inline CSS, SVG and one
inline script; nothing fetched from the network; open it from disk), on an
axis counted from the session's start. Click a row for its full key (with a
copy button), attempts, the text the model was given and, on a blocked row,
the agentctl resolve commands that settle it; rows that need a look are open
from the start. The page filters by tool and status (#tool=T&status=S in
its address) and reflows down to 800 px. Without --html: on a terminal a
compact text
timeline that fits 80 columns; otherwise tab-separated lines, one per intent
(see below); --json prints the same data as one JSON object.

Tab-separated columns: index, key, tenant, turn, tool, effect, state, status,
attempt classes (comma-separated, in order; "running" or "stopped" for an
attempt without an end), on re-issue, reason.`,
	main: withRun(timelineCmd, runTimeline),
}

type timelineOptions struct {
	journal journalFlags
	session string
	tenant  string
	html    string
	json    bool
}

func timelineCmd(e *env, fs *pflag.FlagSet, run runFunc[timelineOptions]) func(context.Context, []string) error {
	var o timelineOptions
	o.journal.register(fs)
	fs.StringVar(&o.session, "session", "", "the `SESSION` to draw (required)")
	fs.StringVar(&o.tenant, "tenant", "", "only this `TENANT`'s intents in the session")
	fs.StringVar(&o.html, "html", "", "write a self-contained HTML page to `FILE` (\"-\": standard output)")
	fs.BoolVar(&o.json, "json", false, "print the timeline as one JSON object (see 'agentctl help json')")
	return func(ctx context.Context, pos []string) error {
		if len(pos) > 0 {
			return usageErrorf("unexpected argument %q; timeline takes --session S", pos[0])
		}
		if o.session == "" {
			return usageErrorf("--session is required; agentctl ls shows sessions")
		}
		if o.json && o.html != "" {
			return usageErrorf("--json and --html are exclusive: pick one output")
		}
		return run(ctx, e, &o)
	}
}

func runTimeline(ctx context.Context, e *env, o *timelineOptions) error {
	now := e.now()
	s, err := o.journal.open(ctx, e, true)
	if err != nil {
		return err
	}
	// The timeline reads top to bottom in the order the agent made the
	// calls.
	recs, err := sessionRecords(ctx, s, o.session, o.tenant)
	s.Close()
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return &cliError{code: exitNotFound, err: fmt.Errorf("no intents recorded for session %q%s", o.session, tenantNote(o.tenant)),
			hint: "check --session (agentctl ls shows sessions)"}
	}
	tl := buildTimeline(recs, o.session, o.tenant, now, !isRemote(o.journal.location))

	switch {
	case o.json:
		jw := newJSONWriter(e.stdout)
		if err := jw.write(tl); err != nil {
			return err
		}
		return jw.flush()
	case o.html == "-":
		return writeTimelineHTML(e.stdout, tl, e.loc, o.journal.location)
	case o.html != "":
		return writeTimelineFile(e, o.html, tl, o.journal.location)
	case e.stdoutTTY:
		return writeTimelineText(e.stdout, tl, e.loc, textWidth)
	}
	rw := newRowWriter(e.stdout, false)
	for i, in := range tl.Intents {
		rw.row(fmt.Sprint(i+1), in.Key, in.Tenant, in.Turn, in.Tool, in.Effect, in.State, in.Status,
			joinClasses(in.Attempts), in.Reissue, in.ReissueReason)
	}
	return rw.flush()
}

// writeTimelineFile writes the page next to its final name and renames it
// into place, so a browser that has the old page open never reads half of
// the new one.
func writeTimelineFile(e *env, path string, tl *timeline, journalLoc string) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := writeTimelineHTML(f, tl, e.loc, journalLoc); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s: %d intents of session %s%s, %s to %s\n", path, len(tl.Intents), escapeField(tl.Session),
		tenantNote(tl.Tenant), e.humanTime(tl.From), e.humanTime(tl.To))
	return nil
}

// textWidth is the terminal width the text timeline fits.
const textWidth = 80
