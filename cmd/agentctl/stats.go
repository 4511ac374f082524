package main

import (
	"context"
	"fmt"
	"github.com/spf13/pflag"
	"sort"
	"strconv"
	"time"

	"github.com/agentonce/agentonce/journal"
)

var statsCommand = &command{
	name:    "stats",
	args:    "[flags]",
	summary: "count intents by state and tool; attempts, size, age, expired",
	long: `Counts the journal's records by state and by tool, the attempts per intent,
the file size, the oldest and newest record, and the records past their TTL
that gc has not removed yet.

The counts come from counters the journal keeps (a PostgreSQL journal
reads every record); --scan recounts them by reading every record instead
(a check: both must agree).`,
	main: withRun(statsCmd, runStats),
}

type statsOptions struct {
	journal journalFlags
	json    bool
	scan    bool
}

func statsCmd(e *env, fs *pflag.FlagSet, run runFunc[statsOptions]) func(context.Context, []string) error {
	var o statsOptions
	o.journal.register(fs)
	fs.BoolVar(&o.json, "json", false, "print the counts as one JSON object (see 'agentctl help json')")
	fs.BoolVar(&o.scan, "scan", false, "count by reading every record instead of from the journal's counters")
	return func(ctx context.Context, pos []string) error {
		if len(pos) > 0 {
			return usageErrorf("unexpected argument %q; stats takes only flags", pos[0])
		}
		return run(ctx, e, &o)
	}
}

type statsJSON struct {
	Journal           string         `json:"journal"`
	SizeBytes         int64          `json:"size_bytes"`
	Records           int            `json:"records"`
	Expired           int            `json:"expired"`
	Attempts          int            `json:"attempts"`
	AttemptsPerIntent float64        `json:"attempts_per_intent"`
	Oldest            *time.Time     `json:"oldest"`
	Newest            *time.Time     `json:"newest"`
	ByState           map[string]int `json:"by_state"`
	ByTool            map[string]int `json:"by_tool"`
}

// allStates lists every state, so that counts of zero show too.
var allStates = []journal.State{journal.StatePending, journal.StateSucceeded,
	journal.StateFailed, journal.StateSuppressed, journal.StateUnknown}

func runStats(ctx context.Context, e *env, o *statsOptions) error {
	r, err := computeStats(ctx, e, o)
	if err != nil {
		return err
	}
	switch {
	case o.json:
		return writeStatsJSON(e, r)
	case !e.stdoutTTY:
		return writeStatsLines(e, r)
	}
	return writeStatsHuman(e, r)
}

// statsReport is what every stats rendering shows.
type statsReport struct {
	journal   string // the location, as given
	st        journal.Stats
	perIntent float64
	tools     []string // most used first
}

// computeStats reads the journal's counts and derives what the renderings
// share.
func computeStats(ctx context.Context, e *env, o *statsOptions) (*statsReport, error) {
	s, err := o.journal.open(ctx, e, true)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	stats := s.Stats
	if sc, ok := s.(interface {
		ScanStats(context.Context) (journal.Stats, error)
	}); ok && o.scan {
		stats = sc.ScanStats // other stores count from their records anyway
	}
	st, err := stats(ctx)
	if err != nil {
		return nil, err
	}
	r := &statsReport{journal: o.journal.location, st: st}
	if st.Records > 0 {
		r.perIntent = float64(st.Attempts) / float64(st.Records)
	}
	r.tools = make([]string, 0, len(st.ByTool))
	for t := range st.ByTool {
		r.tools = append(r.tools, t)
	}
	// Most used first; ties by name, so the output is stable.
	sort.Slice(r.tools, func(i, j int) bool {
		a, b := st.ByTool[r.tools[i]], st.ByTool[r.tools[j]]
		if a != b {
			return a > b
		}
		return r.tools[i] < r.tools[j]
	})
	return r, nil
}

func writeStatsJSON(e *env, r *statsReport) error {
	st := &r.st
	j := statsJSON{
		Journal: r.journal, SizeBytes: st.SizeBytes, Records: st.Records,
		Expired: st.Expired, Attempts: st.Attempts, AttemptsPerIntent: r.perIntent,
		Oldest: optTime(st.Oldest), Newest: optTime(st.Newest),
		ByState: map[string]int{}, ByTool: map[string]int{},
	}
	for _, sv := range allStates {
		j.ByState[sv.String()] = st.ByState[sv]
	}
	for t, n := range st.ByTool {
		j.ByTool[t] = n
	}
	jw := newJSONWriter(e.stdout)
	if err := jw.write(&j); err != nil {
		return err
	}
	return jw.flush()
}

// writeStatsLines writes stable "name<TAB>value" lines; state.X and tool.X
// for the counts.
func writeStatsLines(e *env, r *statsReport) error {
	st := &r.st
	rw := newRowWriter(e.stdout, false)
	rw.row("journal", r.journal)
	rw.row("size_bytes", strconv.FormatInt(st.SizeBytes, 10))
	rw.row("records", strconv.Itoa(st.Records))
	rw.row("expired", strconv.Itoa(st.Expired))
	rw.row("attempts", strconv.Itoa(st.Attempts))
	rw.row("attempts_per_intent", strconv.FormatFloat(r.perIntent, 'f', 2, 64))
	rw.row("oldest", machineTime(st.Oldest))
	rw.row("newest", machineTime(st.Newest))
	for _, sv := range allStates {
		rw.row("state."+sv.String(), strconv.Itoa(st.ByState[sv]))
	}
	for _, t := range r.tools {
		rw.row("tool."+t, strconv.Itoa(st.ByTool[t]))
	}
	return rw.flush()
}

// writeStatsHuman writes three tables for a terminal: the totals, the
// counts by state, the counts by tool.
func writeStatsHuman(e *env, r *statsReport) error {
	st := &r.st
	rw := newRowWriter(e.stdout, true)
	size := "unknown"
	if st.SizeBytes > 0 {
		size = humanBytes(st.SizeBytes)
	}
	rw.row("journal", r.journal)
	rw.row("size", size)
	rw.row("records", strconv.Itoa(st.Records))
	expired := strconv.Itoa(st.Expired)
	if st.Expired > 0 {
		expired += " (past their TTL; agentctl gc removes them)"
	}
	rw.row("expired", expired)
	rw.row("attempts", fmt.Sprintf("%d (%.2f per intent)", st.Attempts, r.perIntent))
	rw.row("oldest", e.humanTime(st.Oldest))
	rw.row("newest", e.humanTime(st.Newest))
	if err := rw.flush(); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout)
	rw = newRowWriter(e.stdout, true)
	rw.row("STATE", "INTENTS")
	for _, sv := range allStates {
		rw.row(sv.String(), strconv.Itoa(st.ByState[sv]))
	}
	if err := rw.flush(); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout)
	rw = newRowWriter(e.stdout, true)
	rw.row("TOOL", "INTENTS")
	for _, t := range r.tools {
		rw.row(t, strconv.Itoa(st.ByTool[t]))
	}
	return rw.flush()
}

// humanBytes formats n with a binary unit.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
