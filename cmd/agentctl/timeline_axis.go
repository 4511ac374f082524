package main

import (
	"cmp"
	"slices"
	"time"
)

// span is a stretch of time [from, to]; from == to is an instant.
type span struct{ from, to time.Time }

func (s span) dur() time.Duration { return s.to.Sub(s.from) }

// timeAxis is the time axis shared by every row. It keeps the stretches in
// which something happened at one scale and cuts the long idle gaps
// between them down to a fixed width, so that a session of a few seconds
// that was resumed hours later still shows its attempts.
type timeAxis struct {
	// segs are the stretches drawn to scale, oldest first; between two
	// consecutive ones is a cut gap.
	segs []span
}

// Cutting rules: a gap is cut when it is longer than cutShare of the
// stretch still drawn to scale and longer than minCut; at most maxCuts
// gaps are cut, the longest first.
const (
	cutShare = 0.10
	minCut   = time.Second
	maxCuts  = 24
)

func newTimeAxis(spans []span) *timeAxis {
	if len(spans) == 0 {
		return &timeAxis{}
	}
	s := slices.Clone(spans)
	slices.SortFunc(s, func(a, b span) int { return a.from.Compare(b.from) })
	merged := []span{s[0]}
	for _, x := range s[1:] {
		last := &merged[len(merged)-1]
		if !x.from.After(last.to) {
			last.to = maxTime(last.to, x.to)
			continue
		}
		merged = append(merged, x)
	}
	// Gap i lies between merged[i] and merged[i+1].
	order := make([]int, len(merged)-1)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(gapLen(merged, b), gapLen(merged, a))
	})
	scaled := merged[len(merged)-1].to.Sub(merged[0].from)
	cut := make([]bool, len(order))
	for n, i := range order {
		g := gapLen(merged, i)
		if n == maxCuts || g <= minCut || float64(g) <= cutShare*float64(scaled) {
			break
		}
		cut[i] = true
		scaled -= g
	}
	a := &timeAxis{segs: []span{merged[0]}}
	for i, x := range merged[1:] {
		if cut[i] {
			a.segs = append(a.segs, x)
			continue
		}
		a.segs[len(a.segs)-1].to = x.to
	}
	return a
}

func gapLen(m []span, i int) time.Duration { return m[i+1].from.Sub(m[i].to) }

func (a *timeAxis) from() time.Time {
	if len(a.segs) == 0 {
		return time.Time{}
	}
	return a.segs[0].from.UTC()
}

func (a *timeAxis) to() time.Time {
	if len(a.segs) == 0 {
		return time.Time{}
	}
	return a.segs[len(a.segs)-1].to.UTC()
}

// gaps returns the cut gaps, oldest first.
func (a *timeAxis) gaps() []span {
	var g []span
	for i := 1; i < len(a.segs); i++ {
		g = append(g, span{a.segs[i-1].to, a.segs[i].from})
	}
	return g
}

// axisLayout places the axis on width units (pixels or columns).
type axisLayout struct {
	a *timeAxis
	// x0 is where each segment starts; a segment is pad wide plus its
	// duration at perSec units a second.
	x0     []float64
	pad    float64
	gapW   float64
	perSec float64
	width  float64
}

// layout fits the axis into width units: each cut gap gets gapW (less when
// there are many), each segment a pad of padW around its instants (so a
// segment of one instant is still visible), the rest is shared to scale.
func (a *timeAxis) layout(width, gapW, padW float64) *axisLayout {
	l := &axisLayout{a: a, width: width, pad: padW}
	n := len(a.segs)
	if n == 0 {
		return l
	}
	if n > 1 {
		l.gapW = min(gapW, 0.35*width/float64(n-1))
	}
	l.pad = min(padW, 0.25*width/float64(n))
	var active time.Duration
	for _, s := range a.segs {
		active += s.dur()
	}
	free := width - float64(n-1)*l.gapW - float64(n)*l.pad
	if active > 0 {
		l.perSec = free / active.Seconds()
	} else {
		// Only instants: share the room between the segments.
		l.pad += free / float64(n)
	}
	x := 0.0
	for _, s := range a.segs {
		l.x0 = append(l.x0, x)
		x += l.pad + s.dur().Seconds()*l.perSec + l.gapW
	}
	return l
}

// x is where t lies; an instant inside a cut gap is drawn in its middle.
func (l *axisLayout) x(t time.Time) float64 {
	segs := l.a.segs
	for i, s := range segs {
		if t.Before(s.from) {
			if i == 0 {
				return l.x0[0] + l.pad/2
			}
			return l.x0[i] - l.gapW/2
		}
		if !t.After(s.to) {
			return l.x0[i] + l.pad/2 + t.Sub(s.from).Seconds()*l.perSec
		}
	}
	if len(segs) == 0 {
		return 0
	}
	last := len(segs) - 1
	return l.x0[last] + l.pad/2 + segs[last].dur().Seconds()*l.perSec
}

// segEnd is where segment i's room ends (the start of the gap after it).
func (l *axisLayout) segEnd(i int) float64 {
	return l.x0[i] + l.pad + l.a.segs[i].dur().Seconds()*l.perSec
}

// tickStep is the smallest round step that puts ticks at least minGap
// units apart, or 0 when the scale is flat.
func (l *axisLayout) tickStep(minGap float64) time.Duration {
	if l.perSec <= 0 {
		return 0
	}
	for _, d := range tickSteps {
		if d.Seconds()*l.perSec >= minGap {
			return d
		}
	}
	return tickSteps[len(tickSteps)-1]
}

var tickSteps = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}
