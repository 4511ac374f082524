package main

import (
	"fmt"
	"html"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The page is HTML rows, each a <details> element: its summary is the
// row (index, tool, status, short key, a chart of its attempts on the
// shared axis, the attempt count, the intent's duration and what a
// re-issue would do), and opening it shows everything else (full key,
// attempts with their times and errors, marks, the text the model was
// given, the resolve command of a blocked intent). Rows that need a look
// are open from the start, so a screenshot or a printout shows them
// without a hover. The charts are SVG whose x coordinates are percentages
// of the chart column, so the page reflows from 800 px up; CSS keeps each
// bar at least chartMinPx wide at any width.

// chartUnits is the axis's width in layout units; x/chartUnits*100 is a
// percentage of the chart column.
const (
	chartUnits = 1000.0
	chartGapW  = 40.0 // a cut gap, in units
	chartPadW  = 8.0  // room around a segment's instants, in units
	chartH     = 22   // a row's chart, in pixels
	chartBarH  = 12
	// A bar is drawn at least chartMinPx wide, however short its attempt
	// (its hover text gives the real time); chartMinW, in percent, is the
	// fallback of a renderer that takes no CSS width on SVG shapes.
	chartMinPx = 6
	chartMinW  = 0.3
)

// attemptClasses are the bar classes, in legend order, with what each
// means. Only those a page shows are in its legend.
var attemptClasses = []struct{ class, label, meaning string }{
	{"success", "success", "the attempt returned a result"},
	{"not-executed", "not executed", "provably did not take effect (refused, 429, 503)"},
	{"maybe-executed", "maybe executed", "may have taken effect (timeout, reset, 5xx)"},
	{"in-flight", "in flight (409)", "the downstream was still processing the key"},
	{"mismatch", "mismatch", "422 or the key reused with another input: suppressed"},
	{"terminal", "terminal", "a definite failure (4xx, validation)"},
	{"canceled", "canceled", "the caller left; what the try did is not known"},
	{classRunning, "running", "no end yet, its owner's lease is live"},
	{classStopped, "owner stopped", "its process died during it (a crash or a kill): it may have executed"},
	{"unknown", "closed by takeover", "a restarted or other process took the intent over; this attempt's outcome is unknown"},
	{"resolved", "closed by resolve", "an operator settled the intent while this attempt was open"},
	{"other", "other", "a class this agentctl does not know"},
}

// markKinds are the marks, in legend order. Takeover is drawn where an
// attempt follows one whose owner stopped.
var markKinds = []struct{ kind, label string }{
	{markRetry, "retry with the same key (each bar runs until the next attempt starts, its backoff included)"},
	{markWait, "waited on a key in flight downstream (after a 409)"},
	{markTakeover, "taken over after its owner stopped (a restart, or another process)"},
	{markSuppress, "suppressed"},
	{markResolve, "resolved by an operator"},
	{markApprove, "approved"},
	{markReject, "rejected"},
}

// markGlyph draws the instant marks.
var markGlyph = map[string]string{markSuppress: "⊘", markResolve: "◆", markApprove: "✓", markReject: "✗"}

// markTakeover is drawn, not recorded: the retry mark after an attempt
// whose owner stopped.
const markTakeover = "takeover"

// pageCSS styles the page; class names match the markup's.
const pageCSS = `
*{box-sizing:border-box}
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1f2933;margin:0;background:#fff}
h1{font-size:18px;margin:0 0 2px}
p{margin:2px 0}
code,.mono{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12px}
.head{position:sticky;top:0;background:#fff;z-index:2;padding:10px 12px 0;border-bottom:1px solid #cbd2d9}
.filters{display:flex;flex-wrap:wrap;gap:4px 14px;margin:6px 0;align-items:center}
.filters select{font:inherit}
.legend{display:flex;flex-wrap:wrap;gap:2px 14px;margin:4px 0 6px}
.legend span{white-space:nowrap}
.legend svg{vertical-align:middle;margin-right:4px}
.grid{display:grid;grid-template-columns:28px 130px 104px 76px minmax(200px,1fr) 62px 56px 120px;column-gap:8px;align-items:center;padding:0 12px 0 8px}
.axis{height:30px;font-size:11px;color:#52606d}
.axis .chart{height:30px}
.colh{font-weight:600;color:#3e4c59;font-size:12px}
details.intent{border-bottom:1px solid #e4e7eb}
details.intent:nth-child(even) summary{background:#f5f7fa}
summary{list-style:none;cursor:pointer;min-height:24px;border-left:4px solid transparent}
summary::-webkit-details-marker{display:none}
summary:hover{background:#e4ecf7!important}
.a-unknown summary{background:#fff1c7!important;border-left-color:#f39c12}
.a-blocked summary{background:#fde0dc!important;border-left-color:#d73027}
.idx{text-align:right;color:#7b8794}
.idx::before{content:"\25B8 ";color:#9aa5b1}
details[open] .idx::before{content:"\25BE "}
.tool{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.status{font-weight:600;white-space:nowrap}
.st-succeeded{color:#1a7f43}.st-failed{color:#b42318}.st-suppressed{color:#6c2f8a}.st-unknown{color:#9a5b00}.st-in-progress{color:#2f5fb8}
.short{color:#52606d}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.next{font-weight:600;font-size:12px;border-radius:3px;padding:1px 6px;white-space:nowrap;justify-self:start}
.n-answer{background:#dff3e6;color:#145c32}.n-retry,.n-wait{background:#dce6f8;color:#1d3f80}.n-block{background:#a61b1b;color:#fff}.n-anew{background:#e4e7eb;color:#3e4c59}
svg.chart{display:block;width:100%;height:22px;overflow:visible}
.c-success{fill:#1a9850}.c-not-executed{fill:#a6adb4}.c-maybe-executed{fill:#f39c12}
.c-in-flight{fill:#4c7ddc}.c-mismatch{fill:#8e44ad}.c-terminal{fill:#d73027}.c-canceled{fill:#5d6d7e}
.c-running{fill:url(#p-running)}.c-stopped,.c-unknown{fill:url(#p-stopped)}.c-resolved{fill:#0b7285}.c-other{fill:#000}
rect.attempt,rect.lg-bar{stroke:#fff;stroke-width:1.5}
.mark{transform-box:view-box}
.wait{stroke:#4c7ddc;stroke-width:2;stroke-dasharray:3 2}
.retry{stroke:#1f2933;stroke-width:2}
.takeover{stroke:#c2185b;stroke-width:3}
text.suppress,text.resolve,text.approve,text.reject{font-size:15px;text-anchor:middle;font-weight:bold}
text.approve{fill:#1a7f43}text.reject{fill:#b42318}span.approve{color:#1a7f43;font-weight:bold}span.reject{color:#b42318;font-weight:bold}
.a-approval summary{background:#e3ecfb!important;border-left-color:#2f5fb8}.st-awaiting{color:#2f5fb8}
text.suppress{text-anchor:start}
text.suppress{fill:#6c2f8a}text.resolve{fill:#0b7285}span.suppress{color:#6c2f8a;font-weight:bold}span.resolve{color:#0b7285}
.cut{fill:url(#p-cut)}
.tick line{stroke:#9aa5b1}.tick text{font-size:11px;fill:#52606d;text-anchor:middle}.tick text.first{text-anchor:start}.tick text.last{text-anchor:end}
.cut-label{font-size:10px;fill:#52606d;text-anchor:middle}
.now{stroke:#1f2933;stroke-width:1;stroke-dasharray:2 2}
.detail{padding:6px 12px 10px 44px;background:#fbfcfd;border-top:1px dashed #d9e0e7}
.detail table{border-collapse:collapse;margin:4px 0}
.detail td,.detail th{padding:1px 10px 1px 0;text-align:left;vertical-align:top}
.detail th{font-weight:600;color:#3e4c59}
.detail .err{color:#7a271a;max-width:52em;overflow-wrap:anywhere}
.key{user-select:all;background:#eef2f6;padding:0 4px;border-radius:2px}
.cmd{user-select:all;display:block;white-space:pre-wrap;overflow-wrap:anywhere;background:#1f2933;color:#f5f7fa;padding:4px 8px;border-radius:3px;margin:2px 0}
button.copy{font:inherit;font-size:11px;padding:0 6px;margin-left:6px;cursor:pointer}
.model{white-space:pre-wrap;overflow-wrap:anywhere;max-width:60em}
.muted{color:#616e7c}
@media (max-width:980px){
.grid{grid-template-columns:24px 96px 96px minmax(160px,1fr) 62px 50px 112px;column-gap:6px}
.short,.colh.short{display:none}
.tick text.alt{display:none}
.detail{padding-left:30px}
}
`

// pageScript makes the filters and the copy buttons work; without it the
// page shows every row and the keys are still selected whole by a click.
// It fetches nothing. The filter is kept in the address's fragment
// (#tool=NAME&status=NAME), so a filtered page can be reloaded or shared.
const pageScript = `
(function(){
var tool=document.getElementById("f-tool"),status=document.getElementById("f-status"),shown=document.getElementById("f-shown");
var rows=document.querySelectorAll("details.intent");
function apply(){
  var n=0;
  rows.forEach(function(r){
    var ok=(!tool.value||r.dataset.tool===tool.value)&&(!status.value||r.dataset.status===status.value||r.dataset.attention===status.value);
    r.hidden=!ok; if(ok){n++;}
  });
  shown.textContent=n+" of "+rows.length+" shown";
  var h=[];
  if(tool.value){h.push("tool="+encodeURIComponent(tool.value));}
  if(status.value){h.push("status="+encodeURIComponent(status.value));}
  if(history.replaceState){history.replaceState(null,"",h.length?"#"+h.join("&"):location.pathname);}
}
location.hash.replace(/^#/,"").split("&").forEach(function(kv){
  var i=kv.indexOf("="); if(i<0){return;}
  var k=kv.slice(0,i),v=decodeURIComponent(kv.slice(i+1));
  var sel=k==="tool"?tool:k==="status"?status:null;
  if(sel&&Array.prototype.some.call(sel.options,function(o){return o.value===v;})){sel.value=v;}
});
tool.addEventListener("change",apply);status.addEventListener("change",apply);
document.querySelectorAll("button.copy").forEach(function(b){
  b.addEventListener("click",function(ev){
    ev.preventDefault();
    var t=b.dataset.copy;
    if(navigator.clipboard){navigator.clipboard.writeText(t).then(function(){b.textContent="copied";},function(){});}
  });
});
apply();
})();
`

// writeTimelineHTML writes tl as one self-contained page: inline CSS, SVG
// and one inline script, nothing fetched. It works opened from disk.
// journalLoc is the journal as the resolve commands name it.
func writeTimelineHTML(w io.Writer, tl *timeline, loc *time.Location, journalLoc string) error {
	lay := tl.axis.layout(chartUnits, chartGapW, chartPadW)
	pct := func(t time.Time) float64 { return lay.x(t) / chartUnits * 100 }
	var b strings.Builder
	esc := escapeHTML
	title := "Session " + tl.Session + tenantNote(tl.Tenant)
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width\">\n")
	fmt.Fprintf(&b, "<title>%s: agentctl timeline</title>\n<style>%s</style>\n</head>\n<body>\n", esc(title), pageCSS)
	b.WriteString(svgDefs)
	b.WriteString("<div class=\"head\">\n")
	fmt.Fprintf(&b, "<h1>%s</h1>\n", esc(title))
	fmt.Fprintf(&b, "<p>%d intents, %s from %s to %s (times below are from its start); drawn at %s. %s</p>\n",
		len(tl.Intents), esc(shortDuration(tl.To.Sub(tl.From))), esc(tl.From.In(loc).Format("2006-01-02 15:04:05.000")),
		esc(tl.To.In(loc).Format("15:04:05.000 MST")), esc(tl.At.In(loc).Format("2006-01-02 15:04:05 MST")), esc(summaryLine(tl)))
	fmt.Fprintf(&b, "<p class=\"muted\">Each row is one intent, a tool call as the journal recorded it; click a row for its attempts, "+
		"full key and the text the model was given (rows that need a look are open). A bar is at least %d px wide, however short "+
		"its attempt: hover over it for the real times. A call the journal answered without running the tool, or one that joined "+
		"an identical call already running, is not recorded, so it is not drawn. The last column says what the same call would get "+
		"if the agent made it again now.</p>\n", chartMinPx)
	writeFilters(&b, tl)
	writeLegend(&b, tl)
	writeAxis(&b, tl, lay, pct)
	b.WriteString("</div>\n<div class=\"rows\">\n")
	for i := range tl.Intents {
		writeRow(&b, tl, &tl.Intents[i], i, lay, pct, loc, journalLoc)
	}
	b.WriteString("</div>\n<script>" + pageScript + "</script>\n</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// svgDefs are the patterns the charts fill with, defined once.
const svgDefs = `<svg width="0" height="0" style="position:absolute" aria-hidden="true"><defs>
<pattern id="p-running" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#4c7ddc"/><rect width="3" height="6" fill="#a9c1ef"/></pattern>
<pattern id="p-stopped" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#f39c12"/><rect width="3" height="6" fill="#fff"/></pattern>
<pattern id="p-cut" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="4" height="4" fill="#eef1f4"/><rect width="1" height="4" fill="#c3cad2"/></pattern>
</defs></svg>
`

func summaryLine(tl *timeline) string {
	var parts []string
	for _, st := range []string{"succeeded", "failed", "suppressed", "unknown", "in-progress"} {
		if n := tl.Summary[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	return strings.Join(parts, ", ") + "."
}

// writeFilters writes the tool and status filters: the tools and statuses
// of the page, and "needs a look" for the unknown and blocked rows.
func writeFilters(b *strings.Builder, tl *timeline) {
	var tools, statuses []string
	attention := false
	for _, in := range tl.Intents {
		if !slices.Contains(tools, in.Tool) {
			tools = append(tools, in.Tool)
		}
		if !slices.Contains(statuses, in.Status) {
			statuses = append(statuses, in.Status)
		}
		attention = attention || in.Attention != ""
	}
	slices.Sort(tools)
	slices.Sort(statuses)
	b.WriteString("<div class=\"filters\"><label>tool <select id=\"f-tool\"><option value=\"\">all</option>")
	for _, t := range tools {
		fmt.Fprintf(b, "<option value=\"%s\">%s</option>", escapeHTML(t), escapeHTML(t))
	}
	b.WriteString("</select></label> <label>status <select id=\"f-status\"><option value=\"\">all</option>")
	for _, s := range statuses {
		fmt.Fprintf(b, "<option value=\"%s\">%s</option>", s, s)
	}
	if attention {
		b.WriteString("<option value=\"look\">needs a look</option>")
	}
	fmt.Fprintf(b, "</select></label> <span id=\"f-shown\" class=\"muted\">%d of %d shown</span></div>\n", len(tl.Intents), len(tl.Intents))
}

// writeLegend lists what the page draws, and nothing else.
func writeLegend(b *strings.Builder, tl *timeline) {
	classes := map[string]bool{}
	marks := map[string]bool{}
	for _, in := range tl.Intents {
		for i, a := range in.Attempts {
			classes[barClass(a.Class)] = true
			if i > 0 {
				marks[boundaryMark(&in, i)] = true
			}
		}
		for _, m := range in.Marks {
			if m.Kind != markRetry {
				marks[m.Kind] = true
			}
		}
	}
	b.WriteString("<div class=\"legend\">\n")
	for _, c := range attemptClasses {
		if classes[c.class] {
			fmt.Fprintf(b, "<span title=\"%s\"><svg width=\"22\" height=\"12\"><rect class=\"c-%s\" x=\"0\" y=\"0\" width=\"22\" height=\"12\"/></svg>%s</span>\n",
				escapeHTML(c.meaning), c.class, escapeHTML(c.label))
		}
	}
	for _, m := range markKinds {
		if !marks[m.kind] {
			continue
		}
		var glyph string
		switch m.kind {
		case markRetry:
			glyph = `<svg width="24" height="16"><line class="retry" x1="12" y1="0" x2="12" y2="16"/><rect class="lg-bar c-not-executed" x="0" y="3" width="12" height="10"/><rect class="lg-bar c-success" x="12" y="3" width="12" height="10"/></svg>`
		case markWait:
			glyph = `<svg width="22" height="12"><line class="wait" x1="0" y1="6" x2="22" y2="6"/></svg>`
		case markTakeover:
			glyph = `<svg width="24" height="16"><line class="takeover" x1="12" y1="0" x2="12" y2="16"/><rect class="lg-bar c-stopped" x="0" y="3" width="12" height="10"/><rect class="lg-bar c-success" x="12" y="3" width="12" height="10"/></svg>`
		case markSuppress, markResolve, markApprove, markReject:
			glyph = "<span class=\"" + m.kind + "\">" + markGlyph[m.kind] + "</span> "
		}
		fmt.Fprintf(b, "<span class=\"lg-%s\">%s%s</span>\n", m.kind, glyph, escapeHTML(m.label))
	}
	if len(tl.Gaps) > 0 {
		b.WriteString("<span class=\"lg-cut\"><svg width=\"22\" height=\"12\"><rect class=\"cut\" x=\"0\" y=\"0\" width=\"22\" height=\"12\"/></svg>idle time cut from the axis</span>\n")
	}
	b.WriteString("</div>\n")
}

// barClass is the CSS class of an attempt's bar.
func barClass(class string) string {
	if _, ok := classGlyphs[class]; ok {
		return class
	}
	return "other"
}

// boundaryMark is what is drawn where attempt i (i > 0) of in starts: a
// takeover after an attempt whose owner stopped, a wait after a 409, a
// retry otherwise.
func boundaryMark(in *timelineIntent, i int) string {
	switch in.Attempts[i-1].Class {
	case classStopped, "unknown":
		return markTakeover
	case "in-flight":
		return markWait
	}
	return markRetry
}

// writeAxis draws the time axis relative to the session's start: a label
// at each segment's start, round ticks inside long segments, and each cut
// gap with its length.
func writeAxis(b *strings.Builder, tl *timeline, lay *axisLayout, pct func(time.Time) float64) {
	b.WriteString("<div class=\"grid axis\"><span class=\"colh\">#</span><span class=\"colh\">tool</span><span class=\"colh\">status</span><span class=\"colh short\">key</span>\n")
	b.WriteString("<svg class=\"chart\" height=\"30\">\n")
	lastGap := -1e9
	for _, g := range tl.axis.gaps() {
		mid := pct(g.from.Add(g.dur() / 2))
		w := lay.gapW / chartUnits * 100
		label := ""
		if mid-lastGap >= 2*w { // a gap right after another keeps its length for the hover
			label, lastGap = roundDuration(g.dur()), mid
		}
		fmt.Fprintf(b, "<g class=\"gap\"><title>idle %s: cut from the axis</title><rect class=\"cut\" x=\"%.2f%%\" y=\"0\" width=\"%.2f%%\" height=\"30\"/><text class=\"cut-label\" x=\"%.2f%%\" y=\"27\">%s</text></g>\n",
			escapeHTML(shortDuration(g.dur())), mid-w/2, w, mid, escapeHTML(label))
	}
	// Ticks at least 90 units (9 %) apart, labels at least 70 units.
	step := lay.tickStep(90)
	lastLabel := -1e9
	// A segment's first label starts at its tick, to the right of the
	// cut before it; the others are centred on theirs.
	labels := 0
	tick := func(u float64, t time.Time, segStart bool) {
		anchor := ""
		room := 70.0
		switch {
		case u > chartUnits-70:
			anchor, room = "last", 140 // it would run into the next column: it ends at its tick
		case segStart:
			anchor = "first"
		}
		label := ""
		if u-lastLabel >= room {
			label, lastLabel = relLabel(t.Sub(tl.From)), u
			labels++
		}
		// On a narrow page every other label goes (CSS), so they do not
		// run into each other.
		cls := ""
		if labels%2 == 0 && anchor == "" {
			anchor = "alt"
		}
		if anchor != "" {
			cls = " class=\"" + anchor + "\""
		}
		p := u / chartUnits * 100
		fmt.Fprintf(b, "<g class=\"tick\"><line x1=\"%.2f%%\" y1=\"20\" x2=\"%.2f%%\" y2=\"30\"/>", p, p)
		if label != "" {
			fmt.Fprintf(b, "<text%s x=\"%.2f%%\" y=\"15\">%s</text>", cls, p, escapeHTML(label))
		}
		b.WriteString("</g>\n")
	}
	for i, s := range tl.axis.segs {
		if u := lay.x(s.from); i == 0 || lay.segEnd(i)-u >= 120 {
			tick(u, s.from, true) // a segment too short for its label keeps it for the gap's hover
		}
		if step == 0 {
			continue
		}
		// Round times since the session's start, not round clock times.
		first := tl.From.Add((s.from.Sub(tl.From)/step + 1) * step)
		for t := first; !t.After(s.to); t = t.Add(step) {
			if u := lay.x(t); u-lastLabel >= 90 && lay.segEnd(i)-u >= 20 {
				tick(u, t, false)
			}
		}
	}
	b.WriteString("</svg>\n<span class=\"colh num\" title=\"attempts of the intent\">attempts</span><span class=\"colh num\" title=\"first attempt's start to the last one's end\">took</span><span class=\"colh\" title=\"what the same call, made again now, would get (as agentctl replay says)\">if called again</span></div>\n")
}

// roundDuration is a cut gap's label, short enough for its band: "59m",
// "3h", "2d", "5s".
func roundDuration(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d >= time.Hour:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

// relLabel is an axis label: the time since the session's first attempt.
func relLabel(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	return "+" + shortDuration(d)
}

// writeRow writes one intent: the summary row and its details.
func writeRow(b *strings.Builder, tl *timeline, in *timelineIntent, i int, lay *axisLayout, pct func(time.Time) float64, loc *time.Location, journalLoc string) {
	esc := escapeHTML
	cls := "intent"
	open := ""
	attention := ""
	if in.Attention != "" {
		cls += " a-" + in.Attention
		open = " open"
		attention = "look"
	}
	fmt.Fprintf(b, "<details class=\"%s\" id=\"k-%s\" data-key=\"%s\" data-status=\"%s\" data-reissue=\"%s\" data-attempts=\"%d\" data-tool=\"%s\" data-attention=\"%s\"%s>\n",
		cls, in.Key, in.Key, in.Status, in.Reissue, len(in.Attempts), esc(in.Tool), attention, open)
	status := in.Status
	if in.Attention != "" {
		status += " ⚠"
	}
	fmt.Fprintf(b, "<summary class=\"grid\"><span class=\"idx\">%d</span><span class=\"tool\" title=\"%s\">%s</span><span class=\"status st-%s\">%s</span><span class=\"short mono\">%s</span>\n",
		i+1, esc(in.Tool), esc(in.Tool), in.Status, esc(status), in.Key[:8])
	writeChart(b, tl, in, lay, pct)
	fmt.Fprintf(b, "<span class=\"num\">%d</span><span class=\"num\">%s</span><span class=\"next n-%s\" title=\"%s\">%s</span></summary>\n",
		len(in.Attempts), esc(intentDuration(in)), in.Reissue, esc(in.ReissueReason), esc(reissueLabel(in.Reissue)))
	writeDetail(b, tl, in, loc, journalLoc)
	b.WriteString("</details>\n")
}

// intentDuration is from the first attempt's start to the last one's end
// (or to where a running or stopped one is drawn), "-" without attempts.
func intentDuration(in *timelineIntent) string {
	if len(in.Attempts) == 0 {
		return "-"
	}
	return shortDuration(in.Attempts[len(in.Attempts)-1].drawEnd.Sub(in.Attempts[0].Start))
}

// writeChart draws a row's attempts, one bar each (a white edge parts
// bars that touch, so retries can be counted), and its marks. Retry lines
// and glyphs go under the bars, which they can then never hide.
func writeChart(b *strings.Builder, tl *timeline, in *timelineIntent, lay *axisLayout, pct func(time.Time) float64) {
	mid := float64(chartH) / 2
	shift := barShifts(in, pct)
	fmt.Fprintf(b, "<svg class=\"chart\" height=\"%d\">\n", chartH)
	for _, g := range tl.axis.gaps() {
		p, w := pct(g.from.Add(g.dur()/2)), lay.gapW/chartUnits*100
		fmt.Fprintf(b, "<rect class=\"cut\" x=\"%.2f%%\" y=\"0\" width=\"%.2f%%\" height=\"%d\"/>\n", p-w/2, w, chartH)
	}
	for n := 1; n < len(in.Attempts); n++ {
		p := pct(in.Attempts[n].Start)
		switch boundaryMark(in, n) {
		case markTakeover:
			fmt.Fprintf(b, "<line class=\"mark takeover\" x1=\"%.2f%%\" y1=\"1\" x2=\"%.2f%%\" y2=\"%d\"%s><title>attempt %d: taken over after its owner stopped</title></line>\n",
				p, p, chartH-1, shiftStyle(shift[n]), n+1)
		case markRetry:
			fmt.Fprintf(b, "<line class=\"mark retry\" x1=\"%.2f%%\" y1=\"1\" x2=\"%.2f%%\" y2=\"%d\"%s><title>attempt %d: retried with the same key</title></line>\n",
				p, p, chartH-1, shiftStyle(shift[n]), n+1)
		}
	}
	for _, m := range in.Marks {
		if markGlyph[m.Kind] != "" {
			// Glyphs, not shapes: a text's x takes a percentage and its
			// shape stays the same at any width. A suppression's starts
			// where the last bar ends (pageCSS).
			style := ""
			if m.Kind == markSuppress {
				style = shiftStyle(shift[len(in.Attempts)])
			}
			fmt.Fprintf(b, "<text class=\"mark %s\" x=\"%.2f%%\" y=\"%.1f\"%s><title>%s</title>%s</text>\n",
				m.Kind, pct(m.At), mid+5, style, escapeHTML(m.Text), markGlyph[m.Kind])
		}
	}
	for n, a := range in.Attempts {
		x0 := pct(a.Start)
		w := pct(a.drawEnd) - x0
		x := fmt.Sprintf("%.2f%%", x0)
		if shift[n] != "" {
			x = "calc(" + x + " + " + shift[n] + ")"
		}
		fmt.Fprintf(b, "<rect class=\"attempt c-%s\" data-id=\"%s\" x=\"%.2f%%\" y=\"%.1f\" width=\"%.2f%%\" style=\"x:%s;width:max(%.2f%%,%dpx)\" height=\"%d\"><title>%s</title></rect>\n",
			barClass(a.Class), escapeHTML(a.ID), x0, mid-chartBarH/2, max(w, chartMinW), x, w, chartMinPx, chartBarH,
			escapeHTML(fmt.Sprintf("attempt %d: %s", n+1, attemptTitle(&a, tl.From))))
	}
	for _, m := range in.Marks {
		if m.Kind == markWait { // above the bars, moved with the bar it waited after
			wy := mid - chartBarH/2 - 2.5
			fmt.Fprintf(b, "<line class=\"mark wait\" x1=\"%.2f%%\" y1=\"%.1f\" x2=\"%.2f%%\" y2=\"%.1f\"%s><title>%s</title></line>\n",
				pct(m.At), wy, pct(*m.Until), wy, shiftStyle(shift[attemptAt(in, m.At)]), escapeHTML(m.Text))
		}
	}
	if in.hasRunning() {
		p := pct(tl.At)
		fmt.Fprintf(b, "<line class=\"now\" x1=\"%.2f%%\" y1=\"0\" x2=\"%.2f%%\" y2=\"%d\"><title>now</title></line>\n", p, p, chartH)
	}
	b.WriteString("</svg>\n")
}

// barShifts says how far each attempt's bar, and what is drawn at its
// start, moves right so that the bars before it that were widened to
// chartMinPx do not cover it: a CSS length (percentages are of the
// chart's width), "" for none. Entry len(in.Attempts) is the shift of
// the last bar's end. A row of a few attempts too short to see thus
// shows each, a little later than to scale (their hover texts give the
// real times).
func barShifts(in *timelineIntent, pct func(time.Time) float64) []string {
	shift := make([]string, len(in.Attempts)+1)
	var terms []string
	for n, a := range in.Attempts {
		if len(terms) > 0 {
			shift[n] = strings.Join(terms, " + ")
		}
		if w := pct(a.drawEnd) - pct(a.Start); w*chartNarrowest/100 < chartMinPx {
			terms = append(terms, fmt.Sprintf("max(0px, %dpx - %.2f%%)", chartMinPx, w))
		}
	}
	if len(terms) > 0 {
		shift[len(in.Attempts)] = strings.Join(terms, " + ")
	}
	return shift
}

// chartNarrowest is the chart column's least width in pixels (pageCSS):
// a bar chartMinPx wide there is never widened, and moves nothing.
const chartNarrowest = 160

// shiftStyle moves a mark by shift (barShifts): a translation measured
// against the chart's width (pageCSS's transform-box).
func shiftStyle(shift string) string {
	if shift == "" {
		return ""
	}
	return " style=\"transform:translateX(calc(" + shift + "))\""
}

// attemptAt is the index of the attempt of in that starts at t, or the
// last one starting before it.
func attemptAt(in *timelineIntent, t time.Time) int {
	n := 0
	for i, a := range in.Attempts {
		if !a.Start.After(t) {
			n = i
		}
	}
	return n
}

// writeDetail is what opening a row shows.
func writeDetail(b *strings.Builder, tl *timeline, in *timelineIntent, loc *time.Location, journalLoc string) {
	esc := escapeHTML
	b.WriteString("<div class=\"detail\">\n")
	fmt.Fprintf(b, "<p>key <code class=\"key\">%s</code><button class=\"copy\" type=\"button\" data-copy=\"%s\">copy</button> · %s, %s, state %s · tenant %s, turn %s · created %s</p>\n",
		in.Key, in.Key, esc(in.Tool), esc(in.Effect), esc(in.State), esc(orDash(in.Tenant)), esc(orDash(in.Turn)),
		esc(in.Created.In(loc).Format("2006-01-02 15:04:05.000 MST")))
	if len(in.Attempts) > 0 {
		b.WriteString("<table><tr><th>#</th><th>attempt id</th><th>start</th><th>took</th><th>class</th><th>error</th></tr>\n")
		for n, a := range in.Attempts {
			took := shortDuration(a.drawEnd.Sub(a.Start))
			if a.End == nil {
				took = "no end (" + a.Class + ")"
			}
			mark := ""
			if n > 0 {
				switch boundaryMark(in, n) {
				case markTakeover:
					mark = " <b>taken over</b>"
				case markWait:
					mark = " after a 409 wait"
				}
			}
			fmt.Fprintf(b, "<tr><td>%d</td><td><code>%s</code></td><td>%s%s</td><td>%s</td><td>%s</td><td class=\"err\">%s</td></tr>\n",
				n+1, esc(orDash(a.ID)), esc(relLabel(a.Start.Sub(tl.From))), mark, esc(took), esc(a.Class), esc(clipRunes(a.Error, 400)))
		}
		b.WriteString("</table>\n")
	}
	for _, m := range in.Marks {
		if markGlyph[m.Kind] != "" {
			fmt.Fprintf(b, "<p>%s</p>\n", esc(m.Text))
		}
	}
	fmt.Fprintf(b, "<p>the model was given: <span class=\"model\">%s</span></p>\n", esc(clipRunes(in.ForModel, 600)))
	fmt.Fprintf(b, "<p>if called again now: <b>%s</b>: %s</p>\n", esc(reissueLabel(in.Reissue)), esc(in.ReissueReason))
	if in.Reissue == actBlock {
		b.WriteString("<p>Check the downstream, then settle it (the same call is then answered from the journal):</p>\n")
		for _, c := range resolveCommands(journalLoc, in.Key) {
			fmt.Fprintf(b, "<code class=\"cmd\">%s</code>\n", esc(c))
		}
	}
	b.WriteString("</div>\n")
}

// resolveCommands are the two commands that settle an unknown intent of
// an agent (settleCommands), each with its comment.
func resolveCommands(journalLoc, key string) []string {
	var lines []string
	for _, c := range settleCommands(journalLoc, key, false) {
		lines = append(lines, c.Command+"   # "+c.When)
	}
	return lines
}

// commandJournal is the journal location to print in a command: a
// PostgreSQL URL loses its password (the operator has it; a page should
// not).
func commandJournal(loc string) string {
	if !isRemote(loc) {
		return loc
	}
	u, err := url.Parse(loc)
	if err != nil || u.User == nil {
		return loc
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.User(u.User.Username())
	}
	return u.String()
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// reissueLabel is the last column's word for what the same call would
// get if made again now: agentctl replay's verdict, said of the call.
func reissueLabel(action string) string {
	switch action {
	case actAnswer:
		return "stored answer" // the journal's answer, the tool not run
	case actRetry:
		return "runs again"
	case actWait:
		return "waits"
	case actBlock:
		return "blocked"
	case actAnew:
		return "runs anew" // the record expired
	}
	return action
}

func (in *timelineIntent) hasRunning() bool {
	for _, a := range in.Attempts {
		if a.Class == classRunning {
			return true
		}
	}
	return false
}

// attemptTitle is a bar's hover text: its id, class, times relative to the
// session's start, and error.
func attemptTitle(a *timelineAttempt, from time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s, started %s", orDash(a.ID), a.Class, relLabel(a.Start.Sub(from)))
	if a.End != nil {
		fmt.Fprintf(&b, ", took %s", shortDuration(a.End.Sub(a.Start)))
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
