package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// report writes, per system and mode, the medians over the repetitions
// (the WAL also as its minimum), then agentonce's ratios to each peer read
// inside each repetition, with the targets.
func report(out io.Writer, cfg config, chosen []system, results map[string]map[string][]segment) {
	fmt.Fprintf(out, "%d repetitions × %d steps per system and mode; %d workers in conc\n\n", cfg.reps, cfg.steps, cfg.workers)
	own := cfg.walDir != ""
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "system\tmode\tµs/step\tsteps/s\tWAL B/step\tmin\tWAL rec/step\tFPI/step\tcommits/step\t"
	if own {
		head += "own WAL B/step\town rec/step\town FPI/step\twrite commits/step\t"
	}
	if cfg.serverCPU {
		head += "server CPU µs/step\t"
	}
	fmt.Fprintln(w, head)
	for _, sys := range chosen {
		for _, mode := range []string{seqMode, concMode} {
			segs := results[sys.name][mode]
			fmt.Fprintf(w, "%s\t%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f\t%.2f\t%.2f\t", sys.name, mode,
				median(segs, func(s segment) float64 { return float64(s.perStep()) / float64(time.Microsecond) }),
				median(segs, segment.rate),
				median(segs, func(s segment) float64 { return s.delta.walBytes / float64(s.steps) }),
				minimum(segs, func(s segment) float64 { return s.delta.walBytes / float64(s.steps) }),
				median(segs, func(s segment) float64 { return s.per(s.delta.walRecords) }),
				median(segs, func(s segment) float64 { return s.per(s.delta.walFPI) }),
				median(segs, func(s segment) float64 { return s.per(s.delta.commits) }))
			if own {
				fmt.Fprintf(w, "%.0f\t%.1f\t%.2f\t%.2f\t",
					median(segs, segment.walPerStep),
					median(segs, func(s segment) float64 { return s.per(s.own.records) }),
					median(segs, func(s segment) float64 { return s.per(s.own.fpi) }),
					median(segs, func(s segment) float64 { return s.per(s.own.commits) }))
			}
			if cfg.serverCPU {
				fmt.Fprintf(w, "%.0f\t", median(segs, cpuPerStep))
			}
			fmt.Fprintln(w)
		}
	}
	_ = w.Flush()
	if own {
		fmt.Fprintln(out, "\nown: the WAL of the benchmark's database and its transactions, read with pg_waldump; the WAL ratios below use it")
	}

	ours, ok := results["agentonce"]
	if !ok {
		return
	}
	fmt.Fprintln(out, "\nagentonce ÷ peer, read inside each repetition: median [min–max]   target")
	ratio := func(label, peer, mode string, f func(segment) float64, target string) {
		theirs, ok := results[peer]
		if !ok {
			return
		}
		var rs []float64
		for i := range min(len(ours[mode]), len(theirs[mode])) {
			rs = append(rs, f(ours[mode][i])/f(theirs[mode][i]))
		}
		fmt.Fprintf(out, "  %-56s %.2f× [%.2f–%.2f]   %s\n", label, medianOf(rs), slices.Min(rs), slices.Max(rs), target)
	}
	perStep := func(s segment) float64 { return float64(s.perStep()) }
	ratio("sequential time per step, ÷ DBOS", "dbos", seqMode, perStep, "≤ 0.60×")
	ratio("sequential time per step, ÷ raw async+sync", "raw-async", seqMode, perStep, "≤ 1.15×")
	ratio("sequential time per step, ÷ raw sync+sync", "raw-sync", seqMode, perStep, "")
	ratio(fmt.Sprintf("%d workers, steps/s, ÷ DBOS", cfg.workers), "dbos", concMode, segment.rate, "≥ 1.5×")
	ratio(fmt.Sprintf("%d workers, steps/s, ÷ raw INSERT+UPDATE", cfg.workers), "raw-sync", concMode, segment.rate, "≥ 0.9×")
	ratio(fmt.Sprintf("%d workers, steps/s, ÷ raw async+sync", cfg.workers), "raw-async", concMode, segment.rate, "")
	ratio("WAL bytes per step (seq), ÷ DBOS", "dbos", seqMode, segment.walPerStep, "≤ 1×")
	ratio(fmt.Sprintf("WAL bytes per step (%d workers), ÷ DBOS", cfg.workers), "dbos", concMode, segment.walPerStep, "≤ 1×")
	if cfg.serverCPU {
		ratio("server CPU per step (seq), ÷ raw INSERT+UPDATE", "raw-sync", seqMode, cpuPerStep, "")
		ratio(fmt.Sprintf("server CPU per step (%d workers), ÷ raw INSERT+UPDATE", cfg.workers), "raw-sync", concMode, cpuPerStep, "")
		ratio(fmt.Sprintf("server CPU per step (%d workers), ÷ DBOS", cfg.workers), "dbos", concMode, cpuPerStep, "")
	}
}

// cpuPerStep is the segment's server CPU time per step, in microseconds.
func cpuPerStep(s segment) float64 {
	return float64(s.cpu) / float64(time.Microsecond) / float64(s.steps)
}

func median(segs []segment, f func(segment) float64) float64 {
	vs := make([]float64, len(segs))
	for i, s := range segs {
		vs[i] = f(s)
	}
	return medianOf(vs)
}

func minimum(segs []segment, f func(segment) float64) float64 {
	m := f(segs[0])
	for _, s := range segs[1:] {
		m = min(m, f(s))
	}
	return m
}

func medianOf(vs []float64) float64 {
	vs = slices.Clone(vs)
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}
