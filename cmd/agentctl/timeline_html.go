package main

import (
	"fmt"
	"html"
	"io"
	"strings"
	"time"
)

// Page geometry, in CSS pixels: the label columns, the chart, the
// re-issue column; one row per intent.
const (
	pageLabelW = 360
	pageChartW = 680
	pageNextW  = 150
	pageW      = pageLabelW + pageChartW + pageNextW
	pageRowH   = 22
	pageBarH   = 12
	pageAxisH  = 36
	pageGapW   = 30
	pagePadW   = 10
	pageMinBar = 3
)

// attemptClasses are the bar classes, in legend order, with what each
// means.
var attemptClasses = []struct{ class, label, meaning string }{
	{"success", "success", "the attempt returned a result"},
	{"not-executed", "not executed", "provably did not take effect (refused, 429, 503)"},
	{"maybe-executed", "maybe executed", "may have taken effect (timeout, reset, 5xx)"},
	{"in-flight", "in flight (409)", "the downstream was still processing the key"},
	{"mismatch", "mismatch", "422 or the key reused with another input: suppressed"},
	{"terminal", "terminal", "a definite failure (4xx, validation)"},
	{"canceled", "canceled", "the caller left; what the try did is not known"},
	{classRunning, "running", "no end yet, its owner's lease is live"},
	{classStopped, "owner stopped", "its process died during it (no end, or closed as unknown by the takeover); it may have executed"},
	{"resolved", "closed by resolve", "an operator settled the intent while this attempt was open"},
}

// pageCSS styles the page; class names match the SVG's.
const pageCSS = `
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1f2933;margin:16px;background:#fff}
h1{font-size:18px;margin:0 0 4px}
p{margin:2px 0}
.mono,.key{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;margin:8px 0;max-width:1190px}
.legend span{white-space:nowrap}
.legend svg{vertical-align:middle;margin-right:4px}
.head{position:sticky;top:0;background:#fff;z-index:1;border-bottom:1px solid #cbd2d9}
svg text{font-size:12px;fill:#1f2933}
.c-success{fill:#1a9850}.c-not-executed{fill:#a6adb4}.c-maybe-executed{fill:#f39c12}
.c-in-flight{fill:#4c7ddc}.c-mismatch{fill:#8e44ad}.c-terminal{fill:#d73027}.c-canceled{fill:#5d6d7e}
.c-running{fill:url(#p-running)}.c-stopped,.c-unknown{fill:url(#p-stopped)}.c-resolved{fill:#0b7285}.c-other{fill:#000}
.attempt rect{stroke:#1f2933;stroke-width:.5}
.row-bg{fill:#fff}.intent:nth-child(even) .row-bg{fill:#f5f7fa}
.intent:hover .row-bg{fill:#e4ecf7}
.a-unknown .row-bg,.a-unknown:nth-child(even) .row-bg{fill:#fff1c7}
.a-blocked .row-bg,.a-blocked:nth-child(even) .row-bg{fill:#fde0dc}
.strip{fill:none}.a-unknown .strip{fill:#f39c12}.a-blocked .strip{fill:#d73027}
.a-unknown .status,.a-blocked .status{font-weight:bold}
.st-succeeded{fill:#1a7f43}.st-failed{fill:#b42318}.st-suppressed{fill:#6c2f8a}.st-unknown{fill:#9a5b00}.st-in-progress{fill:#2f5fb8}
.key{fill:#52606d}.idx{fill:#7b8794;text-anchor:end}
.wait{stroke:#4c7ddc;stroke-width:2;stroke-dasharray:3 2}
.retry{stroke:#1f2933;stroke-width:2}
.suppress circle{fill:#fff;stroke:#6c2f8a;stroke-width:2}.suppress line{stroke:#6c2f8a;stroke-width:2}
.resolve polygon{fill:#0b7285;stroke:#fff;stroke-width:1}
.cut{fill:url(#p-cut)}.cut-label{font-size:10px;fill:#52606d;text-anchor:middle}
.tick line{stroke:#9aa5b1}.tick text{font-size:11px;fill:#52606d;text-anchor:middle}
.grid{stroke:#e4e7eb}
.now{stroke:#1f2933;stroke-width:1;stroke-dasharray:2 2}
.next{font-weight:600}.n-answer{fill:#1a7f43}.n-retry{fill:#2f5fb8}.n-wait{fill:#2f5fb8}.n-block{fill:#b42318}.n-anew{fill:#52606d}
`

// writeTimelineHTML writes tl as one self-contained page: inline CSS and
// SVG, no script, nothing fetched. Hover text is SVG <title>, so it works
// in any browser, opened from disk. The SVG parts are well-formed XML.
func writeTimelineHTML(w io.Writer, tl *timeline, loc *time.Location) error {
	lay := tl.axis.layout(pageChartW-20, pageGapW, pagePadW)
	x := func(t time.Time) float64 { return pageLabelW + 10 + lay.x(t) }
	var b strings.Builder
	esc := escapeHTML
	title := "Session " + tl.Session + tenantNote(tl.Tenant)
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width\">\n")
	fmt.Fprintf(&b, "<title>%s: agentctl timeline</title>\n<style>%s</style>\n</head>\n<body>\n", esc(title), pageCSS)
	b.WriteString("<div class=\"head\">\n")
	fmt.Fprintf(&b, "<h1>%s</h1>\n", esc(title))
	fmt.Fprintf(&b, "<p>%d intents, %s to %s; drawn at %s. %s</p>\n", len(tl.Intents),
		esc(tl.From.In(loc).Format("2006-01-02 15:04:05.000")), esc(tl.To.In(loc).Format("15:04:05.000 MST")),
		esc(tl.At.In(loc).Format("2006-01-02 15:04:05 MST")), esc(summaryLine(tl)))
	b.WriteString("<p>Hover a bar for the attempt (id, times, error); hover a row for its key and the text the model was given. " +
		"Replays and collapses run no attempt, so they add no bar: the last column says what a re-issue would do now " +
		"(<b>answer</b> is answered from the journal). Rows shaded amber are unknown; red, blocked until reconciled or resolved.</p>\n")
	writeLegend(&b)
	writeAxis(&b, tl, lay, x, loc)
	b.WriteString("</div>\n")
	writeRows(&b, tl, lay, x, loc)
	b.WriteString("</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func summaryLine(tl *timeline) string {
	var parts []string
	for _, st := range []string{"succeeded", "failed", "suppressed", "unknown", "in-progress"} {
		if n := tl.Summary[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	return strings.Join(parts, ", ") + "."
}

func writeLegend(b *strings.Builder) {
	b.WriteString("<div class=\"legend\">\n")
	for _, c := range attemptClasses {
		fmt.Fprintf(b, "<span title=\"%s\"><svg width=\"22\" height=\"12\"><rect class=\"c-%s\" x=\"0\" y=\"0\" width=\"22\" height=\"12\"/></svg>%s</span>\n",
			escapeHTML(c.meaning), c.class, escapeHTML(c.label))
	}
	b.WriteString(`<span><svg width="22" height="12"><line class="wait" x1="0" y1="6" x2="22" y2="6"/></svg>waited on a key in flight downstream</span>
<span><svg width="12" height="16"><line class="retry" x1="6" y1="0" x2="6" y2="16"/></svg>retry with the same key (a bar runs until the next attempt starts, its backoff included)</span>
<span><svg width="14" height="14" class="suppress"><circle cx="7" cy="7" r="5"/><line x1="3.5" y1="10.5" x2="10.5" y2="3.5"/></svg>suppressed</span>
<span><svg width="14" height="14" class="resolve"><polygon points="7,1 13,7 7,13 1,7"/></svg>resolved by an operator</span>
<span><svg width="22" height="12"><rect class="cut" x="0" y="0" width="22" height="12"/></svg>idle time cut from the axis</span>
</div>
`)
}

// writeAxis draws the sticky time axis: a label at each segment's start,
// round ticks inside long segments, and each cut gap with its length.
func writeAxis(b *strings.Builder, tl *timeline, lay *axisLayout, x func(time.Time) float64, loc *time.Location) {
	fmt.Fprintf(b, "<svg class=\"axis\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", pageW, pageAxisH, pageW, pageAxisH)
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">#</text><text x=\"36\" y=\"%d\">tool</text><text x=\"176\" y=\"%d\">status</text><text x=\"276\" y=\"%d\">key</text>\n",
		26, pageAxisH-6, pageAxisH-6, pageAxisH-6, pageAxisH-6)
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\">on re-issue now</text>\n", pageLabelW+pageChartW+6, pageAxisH-6)
	step := lay.tickStep(90)
	format := "15:04:05"
	if step > 0 && step < time.Second {
		format = "15:04:05.000"
	}
	// A label needs about 64 pixels; a tick too close to the last label
	// keeps its line and loses its label.
	lastLabel := -1e9
	tick := func(tx float64, t time.Time) {
		label := ""
		if tx-lastLabel >= 64 {
			label, lastLabel = t.In(loc).Format(format), tx
		}
		writeTick(b, tx, label)
	}
	for i, s := range tl.axis.segs {
		tick(x(s.from), s.from)
		if step == 0 {
			continue
		}
		for t := s.from.Truncate(step).Add(step); !t.After(s.to); t = t.Add(step) {
			if tx := x(t); tx-lastLabel >= 90 && lay.segEnd(i)+pageLabelW+10-tx >= 20 {
				tick(tx, t)
			}
		}
	}
	for _, g := range tl.axis.gaps() {
		mid := x(g.from.Add(g.dur() / 2))
		fmt.Fprintf(b, "<g class=\"gap\"><title>idle %s, %s to %s: cut from the axis</title><rect class=\"cut\" x=\"%.1f\" y=\"0\" width=\"%.1f\" height=\"12\"/><text class=\"cut-label\" x=\"%.1f\" y=\"10\">%s</text></g>\n",
			escapeHTML(shortDuration(g.dur())), escapeHTML(g.from.In(loc).Format("15:04:05")), escapeHTML(g.to.In(loc).Format("15:04:05")),
			mid-lay.gapW/2, lay.gapW, mid, escapeHTML(shortDuration(g.dur())))
	}
	b.WriteString("</svg>\n")
}

func writeTick(b *strings.Builder, x float64, label string) {
	fmt.Fprintf(b, "<g class=\"tick\"><line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>", x, pageAxisH-12, x, pageAxisH)
	if label != "" {
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%d\">%s</text>", x, pageAxisH-16, escapeHTML(label))
	}
	b.WriteString("</g>\n")
}

// writeRows draws one row per intent: labels, attempt bars, marks between
// and after them, and the re-issue verdict.
func writeRows(b *strings.Builder, tl *timeline, lay *axisLayout, x func(time.Time) float64, loc *time.Location) {
	h := len(tl.Intents) * pageRowH
	fmt.Fprintf(b, "<svg class=\"rows\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", pageW, h, pageW, h)
	b.WriteString(`<defs>
<pattern id="p-running" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#4c7ddc"/><rect width="3" height="6" fill="#a9c1ef"/></pattern>
<pattern id="p-stopped" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#f39c12"/><rect width="3" height="6" fill="#fff"/></pattern>
<pattern id="p-cut" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="4" height="4" fill="#eef1f4"/><rect width="1" height="4" fill="#c3cad2"/></pattern>
</defs>
`)
	b.WriteString("<g class=\"intents\">\n")
	for i := range tl.Intents {
		writeRow(b, &tl.Intents[i], i, x, loc)
	}
	b.WriteString("</g>\n")
	// Over the rows' backgrounds; nothing is drawn inside a cut gap.
	for _, g := range tl.axis.gaps() {
		mid := x(g.from.Add(g.dur() / 2))
		fmt.Fprintf(b, "<rect class=\"cut\" x=\"%.1f\" y=\"0\" width=\"%.1f\" height=\"%d\"><title>idle %s, cut from the axis</title></rect>\n",
			mid-lay.gapW/2, lay.gapW, h, escapeHTML(shortDuration(g.dur())))
	}
	if hasRunning(tl) {
		nx := x(tl.At)
		fmt.Fprintf(b, "<line class=\"now\" x1=\"%.1f\" y1=\"0\" x2=\"%.1f\" y2=\"%d\"><title>now, %s</title></line>\n",
			nx, nx, h, escapeHTML(tl.At.In(loc).Format("15:04:05 MST")))
	}
	b.WriteString("</svg>\n")
}

func writeRow(b *strings.Builder, in *timelineIntent, i int, x func(time.Time) float64, loc *time.Location) {
	esc := escapeHTML
	y := i * pageRowH
	mid := float64(pageRowH) / 2
	cls := "intent st-row-" + in.Status
	if in.Attention != "" {
		cls += " a-" + in.Attention
	}
	fmt.Fprintf(b, "<g class=\"%s\" data-key=\"%s\" data-status=\"%s\" data-reissue=\"%s\" data-attempts=\"%d\" transform=\"translate(0,%d)\">\n",
		cls, in.Key, in.Status, in.Reissue, len(in.Attempts), y)
	fmt.Fprintf(b, "<title>%s</title>\n", esc(rowTitle(in, loc)))
	fmt.Fprintf(b, "<rect class=\"row-bg\" x=\"0\" y=\"0\" width=\"%d\" height=\"%d\"/><rect class=\"strip\" x=\"0\" y=\"0\" width=\"4\" height=\"%d\"/>\n", pageW, pageRowH, pageRowH)
	status := in.Status
	if in.Attention != "" {
		status += " ⚠"
	}
	fmt.Fprintf(b, "<text class=\"idx\" x=\"26\" y=\"15\">%d</text><text class=\"tool\" x=\"36\" y=\"15\">%s</text><text class=\"status st-%s\" x=\"176\" y=\"15\">%s</text><text class=\"key\" x=\"276\" y=\"15\">%s</text>\n",
		i+1, esc(clipRunes(in.Tool, 20)), in.Status, esc(status), in.Key[:8])
	for _, a := range in.Attempts {
		x0, x1 := x(a.Start), x(a.drawEnd)
		if x1-x0 < pageMinBar {
			x1 = x0 + pageMinBar
		}
		c := a.Class
		if _, ok := classGlyphs[c]; !ok {
			c = "other"
		}
		fmt.Fprintf(b, "<g class=\"attempt c-%s\" data-id=\"%s\"><title>%s</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\"/></g>\n",
			c, esc(a.ID), esc(attemptTitle(&a, loc)), x0, mid-pageBarH/2, x1-x0, pageBarH)
	}
	for _, m := range in.Marks {
		switch m.Kind {
		case markWait:
			wy := mid - pageBarH/2 - 2.5
			fmt.Fprintf(b, "<line class=\"mark wait\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"><title>%s</title></line>\n",
				x(m.At), wy, x(*m.Until), wy, esc(m.Text))
		case markRetry:
			rx := x(m.At)
			fmt.Fprintf(b, "<line class=\"mark retry\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"><title>%s</title></line>\n",
				rx, mid-pageBarH/2-3, rx, mid+pageBarH/2+3, esc(m.Text))
		case markSuppress:
			cx := x(m.At) + pageMinBar + 7
			fmt.Fprintf(b, "<g class=\"mark suppress\"><title>%s</title><circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\"/><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>\n",
				esc(m.Text), cx, mid, cx-3.5, mid+3.5, cx+3.5, mid-3.5)
		case markResolve:
			cx := x(m.At)
			fmt.Fprintf(b, "<g class=\"mark resolve\"><title>%s</title><polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\"/></g>\n",
				esc(m.Text), cx, mid-7, cx+7, mid, cx, mid+7, cx-7, mid)
		}
	}
	fmt.Fprintf(b, "<text class=\"next n-%s\" x=\"%d\" y=\"15\"><title>%s</title>%s</text>\n",
		in.Reissue, pageLabelW+pageChartW+6, esc(in.ReissueReason), esc(reissueLabel(in.Reissue)))
	b.WriteString("</g>\n")
}

func reissueLabel(action string) string {
	switch action {
	case actAnswer:
		return "answer (replay)"
	case actBlock:
		return "block (unknown)"
	case actAnew:
		return "anew (expired)"
	}
	return action
}

func hasRunning(tl *timeline) bool {
	for _, in := range tl.Intents {
		for _, a := range in.Attempts {
			if a.Class == classRunning {
				return true
			}
		}
	}
	return false
}

// rowTitle is a row's hover text: where the intent sits, its outcome, the
// text the model was given, and what a re-issue would do.
func rowTitle(in *timelineIntent, loc *time.Location) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s (state %s, %s)\nkey %s\ntenant %s, turn %s, created %s\n%d attempts\n",
		in.Tool, in.Status, in.State, in.Effect, in.Key, orDash(in.Tenant), orDash(in.Turn),
		in.Created.In(loc).Format("2006-01-02 15:04:05.000 MST"), len(in.Attempts))
	for _, m := range in.Marks {
		if m.Kind == markSuppress || m.Kind == markResolve {
			b.WriteString(m.Text + "\n")
		}
	}
	fmt.Fprintf(&b, "the model was given: %s\non re-issue now: %s", clipRunes(in.ForModel, 600), in.ReissueReason)
	return b.String()
}

func attemptTitle(a *timelineAttempt, loc *time.Location) string {
	var b strings.Builder
	fmt.Fprintf(&b, "attempt %s: %s\nstarted %s", orDash(a.ID), a.Class, a.Start.In(loc).Format("15:04:05.000"))
	if a.End != nil {
		fmt.Fprintf(&b, ", ended %s (%s)", a.End.In(loc).Format("15:04:05.000"), shortDuration(a.End.Sub(a.Start)))
	} else {
		b.WriteString(", no end recorded")
	}
	if a.Error != "" {
		b.WriteString("\nerror: " + clipRunes(a.Error, 400))
	}
	return b.String()
}

// escapeHTML escapes s for a page, and what a person must see as it is
// (escapeText): a U+202E in a tool's name must not reverse the row.
func escapeHTML(s string) string { return html.EscapeString(escapeText(s)) }
