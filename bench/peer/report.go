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
	head := "system\tmode\tµs/step\tmedian\tmin\tsteps/s\tWAL B/step\tmin\tWAL rec/step\tFPI/step\tcommits/step\t"
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
			lat := "\t\t"
			if mode == seqMode {
				lat = fmt.Sprintf("%.0f\t%.0f\t", median(segs, segment.latMedian), minimum(segs, segment.latMin))
			}
			fmt.Fprintf(w, "%s\t%s\t%.0f\t%s%.0f\t%.0f\t%.0f\t%.1f\t%.2f\t%.2f\t", sys.name, mode,
				median(segs, func(s segment) float64 { return float64(s.perStep()) / float64(time.Microsecond) }), lat,
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

	fmt.Fprintln(out, "\nmedian/min: of each step's time, sequentially (a session's own writes fall in its first and last steps)")
	ratios(out, cfg, results)
}

// ratios writes the ratios of agentonce (and of the floor) to the peers,
// read inside each repetition, with the targets.
func ratios(out io.Writer, cfg config, results map[string]map[string][]segment) {
	fmt.Fprintln(out, "\nratio, read inside each repetition: median [min–max]   target")
	ratio := func(label, num, den, mode string, f func(segment) float64, target string) {
		ours, ok1 := results[num]
		theirs, ok2 := results[den]
		if !ok1 || !ok2 {
			return
		}
		var rs []float64
		for i := range min(len(ours[mode]), len(theirs[mode])) {
			rs = append(rs, f(ours[mode][i])/f(theirs[mode][i]))
		}
		fmt.Fprintf(out, "  %-12s ÷ %-12s %-44s %.2f× [%.2f–%.2f]   %s\n", num, den, label, medianOf(rs), slices.Min(rs), slices.Max(rs), target)
	}
	conc := fmt.Sprintf("%d workers, steps/s", cfg.workers)
	concCPU := fmt.Sprintf("server CPU per step, %d workers", cfg.workers)
	concWAL := fmt.Sprintf("WAL bytes per step, %d workers", cfg.workers)
	for _, peer := range []string{"dbos-session", "dbos"} {
		target := func(t string) string {
			if peer == "dbos-session" {
				return t
			}
			return ""
		}
		ratio("sequential median time per step", "agentonce", peer, seqMode, segment.latMedian, target("≤ 0.80×"))
		ratio("sequential min time per step", "agentonce", peer, seqMode, segment.latMin, "")
		ratio(conc, "agentonce", peer, concMode, segment.rate, target("≥ 1.5×"))
		ratio("WAL bytes per step, sequential", "agentonce", peer, seqMode, segment.walPerStep, target("≤ 1×"))
		ratio(concWAL, "agentonce", peer, concMode, segment.walPerStep, target("≤ 1×"))
	}
	if cfg.serverCPU {
		ratio(concCPU, "agentonce", "raw-sync", concMode, cpuPerStep, "≤ 1.5×")
		ratio("server CPU per step, sequential", "agentonce", "raw-sync", seqMode, cpuPerStep, "")
	}
	// How close the floor comes to the targets, and agentonce to the floor.
	ratio("sequential median time per step", "floor", "dbos-session", seqMode, segment.latMedian, "")
	ratio(conc, "floor", "dbos-session", concMode, segment.rate, "")
	ratio("WAL bytes per step, sequential", "floor", "dbos-session", seqMode, segment.walPerStep, "")
	ratio("sequential median time per step", "agentonce", "floor", seqMode, segment.latMedian, "")
	ratio(conc, "agentonce", "floor", concMode, segment.rate, "")
	ratio("WAL bytes per step, sequential", "agentonce", "floor", seqMode, segment.walPerStep, "")
	if cfg.serverCPU {
		ratio(concCPU, "floor", "raw-sync", concMode, cpuPerStep, "")
		ratio(concCPU, "agentonce", "floor", concMode, cpuPerStep, "")
	}
	ratio("sequential median time per step", "agentonce", "raw-async", seqMode, segment.latMedian, "")
	ratio(conc, "agentonce", "raw-sync", concMode, segment.rate, "")
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
