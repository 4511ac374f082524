package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

// scaleRecords makes n settled records a few seconds apart, with an idle
// stretch of minutes to hours after every 50th, every 7th retried once.
func scaleRecords(n int) []journal.Record {
	recs := make([]journal.Record, n)
	at := t0
	classes := []string{"", "not-executed", "maybe-executed", "in-flight"}
	for i := range recs {
		if i > 0 && i%50 == 0 {
			at = at.Add(time.Duration(i) * time.Minute)
		}
		at = at.Add(time.Duration(1+i%5) * time.Second)
		r := journal.Record{Key: uuid.NewSHA1(testNS, []byte(strconv.Itoa(i))), State: journal.StateSucceeded,
			Intent:  keyderive.Intent{Tenant: "acme", Session: "big", Turn: strconv.Itoa(i / 10), Tool: fmt.Sprintf("tool_%d", i%9)},
			Created: at, Output: []byte(`{}`)}
		end := at.Add(time.Duration(50+i%400) * time.Millisecond)
		if i%7 == 0 {
			mid := at.Add(300 * time.Millisecond)
			r.Attempts = append(r.Attempts, journal.Attempt{ID: "a", Start: at, End: mid, Class: classes[1+i%3]})
			r.Attempts = append(r.Attempts, journal.Attempt{ID: "b", Start: mid, End: end.Add(300 * time.Millisecond)})
		} else {
			r.Attempts = append(r.Attempts, journal.Attempt{ID: "a", Start: at, End: end})
		}
		if i%97 == 3 {
			r.State, r.ErrorClass, r.ErrorMessage = journal.StateUnknown, "maybe-executed", "timeout"
			r.Attempts[len(r.Attempts)-1].Class = "maybe-executed"
		}
		r.Updated = r.Attempts[len(r.Attempts)-1].End
		r.Expires = r.Updated.Add(24 * time.Hour)
		recs[i] = r
	}
	return recs
}

// TestTimelineScale draws 5 and 500 intents: every bar and mark stays on
// the chart, the axis cuts at most maxCuts gaps, and the text timeline
// keeps to 80 columns.
func TestTimelineScale(t *testing.T) {
	for _, n := range []int{5, 500} {
		recs := scaleRecords(n)
		now := recs[n-1].Updated.Add(time.Minute)
		tl := buildTimeline(recs, "big", "", now, true)
		if len(tl.Gaps) > maxCuts {
			t.Errorf("%d intents: %d cuts; want at most %d", n, len(tl.Gaps), maxCuts)
		}
		if n == 500 && len(tl.Gaps) < 5 {
			t.Errorf("%d intents: %d cuts; want the idle stretches cut", n, len(tl.Gaps))
		}
		var page bytes.Buffer
		if err := writeTimelineHTML(&page, tl, time.UTC, "agent.journal"); err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(page.String(), `<details class="intent`); got != n {
			t.Errorf("%d intents: %d rows on the page", n, got)
		}
		lo, hi := 0.0, 100.0 // percent of the chart column
		for _, m := range regexp.MustCompile(`<rect class="attempt [^"]*" data-id="[^"]*" x="([0-9.]+)%" y="[0-9.]+" width="([0-9.]+)%"`).FindAllStringSubmatch(page.String(), -1) {
			x, _ := strconv.ParseFloat(m[1], 64)
			w, _ := strconv.ParseFloat(m[2], 64)
			if x < lo || x+w > hi+chartMinW {
				t.Errorf("%d intents: a bar at %v..%v, outside the chart %v..%v", n, x, x+w, lo, hi)
				break
			}
		}
		if os.Getenv("AGENTONCE_TIMELINE_DUMP") != "" {
			os.WriteFile(fmt.Sprintf("%s/scale-%d.html", os.Getenv("AGENTONCE_TIMELINE_DUMP"), n), page.Bytes(), 0o644)
		}
		var text bytes.Buffer
		if err := writeTimelineText(&text, tl, time.UTC, textWidth); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(text.String(), "\n") {
			if len([]rune(l)) > textWidth {
				t.Errorf("%d intents: text line of %d columns: %q", n, len([]rune(l)), l)
				break
			}
		}
	}
}

// TestTimelineEscapes puts markup in every recorded text the page shows
// (tool, attempt id, error, output): it stays text, and the SVG stays
// well-formed.
func TestTimelineEscapes(t *testing.T) {
	recs := scaleRecords(3)
	evil := `<script>alert("x")</script>&<img src=x>`
	recs[1].Intent.Tool = evil
	recs[1].Attempts[0].ID = evil
	recs[1].Attempts[0].Error = evil
	recs[1].State, recs[1].ErrorClass, recs[1].ErrorMessage = journal.StateFailed, "terminal", evil
	recs[2].Output = []byte(`{"html":"` + strings.ReplaceAll(evil, `"`, `\"`) + `"}`)
	tl := buildTimeline(recs, "big", "", recs[2].Updated, true)
	var page bytes.Buffer
	if err := writeTimelineHTML(&page, tl, time.UTC, "agent.journal"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script>alert", "<img"} {
		if strings.Contains(page.String(), bad) {
			t.Errorf("page contains %q: recorded text was not escaped", bad)
		}
	}
	if !strings.Contains(page.String(), "&lt;script&gt;") {
		t.Errorf("page lacks the escaped tool name")
	}
	svgStructure(t, page.String()) // fails the test if the SVG is not well-formed
}

// A restart's takeover (an attempt after one its dead owner left, which
// the takeover closed as unknown) is marked on its row and in the legend;
// a page without one (nor a resolve, a suppression, a terminal or running
// attempt) has none of them in its legend.
func TestTimelineTakeoverAndLegend(t *testing.T) {
	recs := scaleRecords(3)
	r := &recs[1]
	mid := r.Attempts[0].Start.Add(200 * time.Millisecond)
	r.Attempts = []journal.Attempt{
		{ID: "a", Start: r.Attempts[0].Start, End: mid, Class: "unknown"},
		{ID: "b", Start: mid, End: mid.Add(100 * time.Millisecond)},
	}
	render := func(recs []journal.Record) string {
		tl := buildTimeline(recs, "big", "", recs[len(recs)-1].Updated, true)
		var page bytes.Buffer
		if err := writeTimelineHTML(&page, tl, time.UTC, "agent.journal"); err != nil {
			t.Fatal(err)
		}
		return page.String()
	}
	page := render(recs)
	for _, want := range []string{`class="mark takeover"`, `class="lg-takeover"`, "<b>taken over</b>", `<rect class="c-unknown"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page with a takeover lacks %q", want)
		}
	}
	plain := render(scaleRecords(3))
	for _, absent := range []string{"lg-takeover", "lg-resolve", "lg-suppress", `rect class="c-terminal"`, `rect class="c-running"`} {
		if strings.Contains(plain, absent) {
			t.Errorf("page of three plain intents has %q in its legend; want only what it draws", absent)
		}
	}
}
