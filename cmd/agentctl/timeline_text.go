package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// classGlyphs draws an attempt's class in the text timeline, one glyph per
// column it covers.
var classGlyphs = map[string]rune{
	"success":        '#',
	"not-executed":   '-',
	"maybe-executed": '?',
	"in-flight":      '~',
	"mismatch":       'x',
	"terminal":       '!',
	"canceled":       'c',
	classRunning:     '>',
	classStopped:     '%',
	// Written by the journal, not a retry class: a takeover closes a
	// dead owner's attempt as "unknown", an operator's resolve as
	// "resolved".
	"unknown":  '%',
	"resolved": 'r',
}

// Mark glyphs: a suppression, a resolution; a cut gap of the axis.
const (
	glyphSuppress = 'S'
	glyphResolve  = 'R'
	glyphApprove  = 'A'
	glyphReject   = 'X'
	glyphCut      = '┆'
)

// Column widths of the text timeline; the bar takes what is left of width.
const (
	textIndexW  = 3
	textToolW   = 12
	textStatusW = 11
	textKeyW    = 8
	textNextW   = 6
)

// writeTimelineText writes one line per intent: index, tool, status, key
// prefix, a bar of its attempts on the shared axis, and what a re-issue
// would do now; then the axis's bounds and cuts and a legend.
func writeTimelineText(w io.Writer, tl *timeline, loc *time.Location, width int) error {
	barW := width - (textIndexW + textToolW + textStatusW + textKeyW + textNextW + 7)
	lay := tl.axis.layout(float64(barW), 1, 1)
	col := func(t time.Time) int {
		return min(barW-1, max(0, int(math.Floor(lay.x(t)))))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Session %s%s: %d intents, %s to %s\n", escapeField(tl.Session), tenantNote(tl.Tenant), len(tl.Intents),
		tl.From.In(loc).Format("2006-01-02 15:04:05.000"), tl.To.In(loc).Format("15:04:05.000 MST"))
	fmt.Fprintf(&b, "%*s %-*s %-*s %-*s %s %s\n", textIndexW, "#", textToolW, "TOOL", textStatusW, "STATUS", textKeyW, "KEY",
		padRunes("ATTEMPTS", barW+2), "NEXT")
	cuts := make([]rune, barW)
	for i := range cuts {
		cuts[i] = ' '
	}
	for i := 1; i < len(tl.axis.segs); i++ {
		cuts[min(barW-1, max(0, int(lay.x0[i]-1)))] = glyphCut
	}
	decided := false
	for i, in := range tl.Intents {
		bar := slices.Clone(cuts)
		for _, a := range in.Attempts {
			g, ok := classGlyphs[a.Class]
			if !ok {
				g = '*'
			}
			for c := col(a.Start); c <= col(a.drawEnd); c++ {
				bar[c] = g
			}
		}
		for _, m := range in.Marks {
			switch m.Kind {
			case markSuppress:
				bar[min(barW-1, col(m.At)+1)] = glyphSuppress
			case markResolve:
				bar[col(m.At)] = glyphResolve
			case markApprove:
				bar[col(m.At)], decided = glyphApprove, true
			case markReject:
				bar[col(m.At)], decided = glyphReject, true
			}
		}
		status := in.Status
		if in.Attention != "" {
			status = strings.ToUpper(status)
		}
		fmt.Fprintf(&b, "%*d %-*s %-*s %-*s |%s| %s\n", textIndexW, i+1, textToolW, clipRunes(escapeField(in.Tool), textToolW),
			textStatusW, clipRunes(status, textStatusW), textKeyW, in.Key[:textKeyW], string(bar), clipRunes(in.Reissue, textNextW))
	}
	for _, g := range tl.Gaps {
		fmt.Fprintf(&b, "%c %s idle, %s to %s, cut from the axis\n", glyphCut, shortDuration(g.To.Sub(g.From)),
			g.From.In(loc).Format("15:04:05"), g.To.In(loc).Format("15:04:05"))
	}
	b.WriteString("# success  - not-executed  ? maybe-executed  ~ in-flight (409)  x mismatch\n")
	b.WriteString("! terminal  c canceled  > running  % owner stopped  S suppressed  R resolved\n")
	if decided {
		b.WriteString("A approved  X rejected\n")
	}
	b.WriteString("NEXT: what a re-issue would do now (as agentctl replay); CAPS: needs a look\n")
	// What settles a blocked intent, once the downstream has been checked.
	for i, in := range tl.Intents {
		if in.Reissue != actBlock {
			continue
		}
		fmt.Fprintf(&b, "%*d %s: agentctl resolve %s\n", textIndexW, i+1, clipRunes(escapeField(in.Tool), textToolW), in.Key)
		fmt.Fprintf(&b, "%*s --succeeded [--output JSON], or --failed --reason TEXT\n", textIndexW+2, "")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// clipRunes shortens s to n runes, marking a cut with "…".
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func padRunes(s string, n int) string {
	if k := utf8.RuneCountInString(s); k < n {
		return s + strings.Repeat(" ", n-k)
	}
	return s
}
