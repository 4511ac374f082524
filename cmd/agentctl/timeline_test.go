package main

import (
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/keyderive"
)

// tlTry is one attempt of a timeline fixture intent: how long it ran, the
// class it ended with, and how long the harness waited before the next.
type tlTry struct {
	dur   time.Duration
	class string
	msg   string
	wait  time.Duration
}

// tlIntent is one intent of the timeline fixture. The last try is closed
// by the completion (state, class, message, output), or left open when
// state is 0.
type tlIntent struct {
	tool    string
	effect  journal.Effect
	at      time.Duration // after t0
	tries   []tlTry
	state   journal.State
	output  string
	lease   time.Duration
	resolve bool
	// want is what the timeline must show: status, attention, re-issue
	// (on a bbolt journal) and the attempt classes.
	wantStatus, wantAttention, wantReissue, wantClasses string
}

// tlIntents has every status, every attempt class and every retry kind:
// backoff after not-executed and maybe-executed, a wait after 409, a
// suppression, an operator's resolution, an owner that stopped, a live
// lease, and an idle hour the axis cuts.
var tlIntents = []tlIntent{
	{tool: "lookup_customer", effect: journal.ReadOnly, at: 0,
		tries: []tlTry{{dur: 80 * time.Millisecond}}, state: journal.StateSucceeded, output: `{"id":"8812"}`,
		wantStatus: "succeeded", wantReissue: "answer", wantClasses: "success"},
	{tool: "charge_card", effect: journal.Keyed, at: time.Second,
		tries: []tlTry{{dur: 2 * time.Second, class: "maybe-executed", msg: "read: connection reset by peer", wait: 300 * time.Millisecond},
			{dur: 400 * time.Millisecond}}, state: journal.StateSucceeded, output: `{"charge":"ch_1"}`,
		wantStatus: "succeeded", wantReissue: "answer", wantClasses: "maybe-executed,success"},
	{tool: "send_email", effect: journal.Unkeyed, at: 2 * time.Second,
		tries: []tlTry{{dur: 50 * time.Millisecond, class: "not-executed", msg: "dial tcp: connection refused", wait: 500 * time.Millisecond},
			{dur: 600 * time.Millisecond}}, state: journal.StateSucceeded, output: `{"sent":true}`,
		wantStatus: "succeeded", wantReissue: "answer", wantClasses: "not-executed,success"},
	{tool: "reserve_seat", effect: journal.Keyed, at: 3 * time.Second,
		tries: []tlTry{{dur: 100 * time.Millisecond, class: "in-flight", msg: "409 Conflict: request in progress", wait: 1200 * time.Millisecond},
			{dur: 300 * time.Millisecond}}, state: journal.StateSucceeded, output: `{"seat":"12A"}`,
		wantStatus: "succeeded", wantReissue: "answer", wantClasses: "in-flight,success"},
	{tool: "transfer", effect: journal.Unkeyed, at: 4 * time.Second,
		tries: []tlTry{{dur: 200 * time.Millisecond, class: "mismatch", msg: "422: key reused with another payload"}}, state: journal.StateSuppressed,
		wantStatus: "suppressed", wantReissue: "answer", wantClasses: "mismatch"},
	{tool: "hold_room", effect: journal.Keyed, at: 5 * time.Second,
		tries: []tlTry{{dur: 100 * time.Millisecond, class: "in-flight", msg: "409 Conflict", wait: 800 * time.Millisecond},
			{dur: 100 * time.Millisecond, class: "in-flight", msg: "409 Conflict"}}, state: journal.StateSuppressed,
		wantStatus: "suppressed", wantReissue: "retry", wantClasses: "in-flight,in-flight"},
	{tool: "book_flight", effect: journal.Keyed, at: 6 * time.Second,
		tries: []tlTry{{dur: 250 * time.Millisecond, class: "terminal", msg: "400 Bad Request: no seats"}}, state: journal.StateFailed,
		wantStatus: "failed", wantReissue: "answer", wantClasses: "terminal"},
	{tool: "fetch_rates", effect: journal.Idempotent, at: 7 * time.Second,
		tries: []tlTry{{dur: 30 * time.Millisecond, class: "not-executed", msg: "503 Service Unavailable", wait: 400 * time.Millisecond},
			{dur: 30 * time.Millisecond, class: "not-executed", msg: "503 Service Unavailable"}}, state: journal.StateFailed,
		wantStatus: "failed", wantReissue: "retry", wantClasses: "not-executed,not-executed"},
	{tool: "pay_invoice", effect: journal.Unkeyed, at: 8 * time.Second,
		tries: []tlTry{{dur: 3 * time.Second, class: "maybe-executed", msg: "context deadline exceeded (timeout)"}}, state: journal.StateUnknown,
		wantStatus: "unknown", wantAttention: "unknown", wantReissue: "block", wantClasses: "maybe-executed"},
	{tool: "notify", effect: journal.Keyed, at: 9 * time.Second,
		tries: []tlTry{{dur: 700 * time.Millisecond, class: "canceled", msg: "context canceled"}}, state: journal.StateUnknown,
		wantStatus: "unknown", wantAttention: "unknown", wantReissue: "retry", wantClasses: "canceled"},
	{tool: "refund", effect: journal.Unkeyed, at: 10 * time.Second, lease: 2 * time.Second,
		tries:      []tlTry{{dur: time.Second}},
		wantStatus: "in-progress", wantAttention: "blocked", wantReissue: "block", wantClasses: "stopped"},
	{tool: "charge_card", effect: journal.Unkeyed, at: 11 * time.Second,
		tries: []tlTry{{dur: 2 * time.Second, class: "maybe-executed", msg: "timeout"}}, state: journal.StateUnknown, resolve: true,
		wantStatus: "succeeded", wantReissue: "answer", wantClasses: "maybe-executed"},
	// An hour later the agent resumes the session.
	{tool: "set_address", effect: journal.Idempotent, at: time.Hour + 20*time.Second,
		tries: []tlTry{{dur: 150 * time.Millisecond}}, state: journal.StateSucceeded, output: `{"ok":true}`,
		wantStatus: "succeeded", wantReissue: "answer", wantClasses: "success"},
	{tool: "ship_order", effect: journal.Keyed, at: time.Hour + 21*time.Second, lease: 24 * time.Hour,
		tries:      []tlTry{{dur: 500 * time.Millisecond}},
		wantStatus: "in-progress", wantReissue: "retry", wantClasses: "stopped"},
}

// tlNow is when the timeline tests draw the fixture.
var tlNow = t0.Add(time.Hour + 30*time.Second)

// tlQuick is session "quick": 370 ms in all, with a lookup whose one
// attempt took 2 ms, a hold whose first attempt, refused, took 2 ms
// before the retry, and a ping refused three times in 3 ms. To scale, at
// 800 px, each of these attempts is under two pixels.
var tlQuick = []tlIntent{
	{tool: "search_flights", effect: journal.ReadOnly, at: 10 * time.Minute,
		tries: []tlTry{{dur: 150 * time.Millisecond}}, state: journal.StateSucceeded, output: `{"flights":3}`},
	{tool: "lookup_customer", effect: journal.ReadOnly, at: 10*time.Minute + 155*time.Millisecond,
		tries: []tlTry{{dur: 2 * time.Millisecond}}, state: journal.StateSucceeded, output: `{"id":"8812"}`},
	{tool: "hold_seat", effect: journal.Keyed, at: 10*time.Minute + 160*time.Millisecond,
		tries: []tlTry{{dur: 2 * time.Millisecond, class: "not-executed", msg: "503 Service Unavailable"},
			{dur: 208 * time.Millisecond}}, state: journal.StateSucceeded, output: `{"seat":"12A"}`},
	{tool: "ping", effect: journal.Idempotent, at: 10*time.Minute + 200*time.Millisecond,
		tries: []tlTry{{dur: time.Millisecond, class: "not-executed", msg: "503"}, {dur: time.Millisecond, class: "not-executed", msg: "503"},
			{dur: time.Millisecond, class: "not-executed", msg: "503"}}, state: journal.StateFailed},
}

// buildTimelineJournal writes tlIntents (session "demo", tenant "acme")
// and tlQuick (session "quick") through the real Store methods into a
// bbolt file in t.TempDir(), plus one intent of another session that must
// not show.
func buildTimelineJournal(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "timeline.db")
	clock := t0
	s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{Namespace: testNS, Now: func() time.Time { return clock }}})
	if err != nil {
		t.Fatalf("OpenBolt(%s): %v", path, err)
	}
	ctx := context.Background()
	d := &keyderive.Deriver{Namespace: testNS}
	other := tlIntent{tool: "other", at: 0, tries: []tlTry{{dur: time.Second}}, state: journal.StateSucceeded, output: `1`}
	all := append(append(slices.Clone(tlIntents), other), tlQuick...)
	for i, in := range all {
		session := "demo"
		switch {
		case i > len(tlIntents):
			session = "quick"
		case i == len(tlIntents):
			session = "elsewhere"
		}
		clock = t0.Add(in.at)
		intent := keyderive.Intent{Tenant: "acme", Session: session, Turn: fmt.Sprint(1 + i/4), Tool: in.tool}
		dv, err := d.Derive(intent, []byte(fmt.Sprintf(`{"n":%d}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		lease := in.lease
		if lease == 0 {
			lease = 30 * time.Second
		}
		id := func(j int) string { return fmt.Sprintf("att-%02d-%d", i+1, j+1) }
		res, err := s.Begin(ctx, journal.BeginRequest{Key: dv.Key, Intent: intent, Fingerprint: dv.Fingerprint, Effect: in.effect,
			Input: dv.Canonical, Owner: "agent-1", AttemptID: id(0), LeaseTTL: lease, Durable: true})
		if err != nil || res.Outcome != journal.Started {
			t.Fatalf("Begin(%s) = %v, %v; want Started", in.tool, res.Outcome, err)
		}
		for j, try := range in.tries[:len(in.tries)-1] {
			clock = clock.Add(try.dur + try.wait)
			if err := s.StartAttempt(ctx, journal.AttemptRequest{Key: dv.Key, Token: res.Token, ID: id(j + 1),
				PrevClass: try.class, PrevError: try.msg, LeaseTTL: lease, Durable: true}); err != nil {
				t.Fatalf("StartAttempt(%s): %v", in.tool, err)
			}
		}
		last := in.tries[len(in.tries)-1]
		clock = clock.Add(last.dur)
		if in.state != 0 {
			var out []byte
			if in.output != "" {
				out = []byte(in.output)
			}
			if _, err := s.Complete(ctx, journal.Completion{Key: dv.Key, Token: res.Token, State: in.state, Output: out,
				ErrorClass: last.class, ErrorMessage: last.msg}); err != nil {
				t.Fatalf("Complete(%s): %v", in.tool, err)
			}
		}
		if in.resolve {
			clock = clock.Add(40 * time.Second)
			if _, err := s.Resolve(ctx, dv.Key, journal.Resolution{State: journal.StateSucceeded, Output: []byte(`{"charge":"ch_9"}`),
				Reason: "seen in the PSP dashboard", By: "bob@ops"}); err != nil {
				t.Fatalf("Resolve: %v", err)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// timelineAt runs agentctl timeline at tlNow.
func timelineAt(t *testing.T, tty bool, args ...string) result {
	t.Helper()
	e, out, errb := testEnv(tty)
	e.now = func() time.Time { return tlNow }
	code := run(context.Background(), e, append([]string{"timeline"}, args...))
	return result{code, out.String(), errb.String()}
}

// TestTimelineJSON checks every row against the fixture: order, status,
// attention, re-issue verdict and attempt classes, and the cut hour.
func TestTimelineJSON(t *testing.T) {
	path := buildTimelineJournal(t)
	r := timelineAt(t, false, "--journal", path, "--session", "demo", "--json")
	if r.code != 0 {
		t.Fatalf("timeline --json = %d, %s", r.code, r.stderr)
	}
	var tl timeline
	if err := jsonUnmarshal(r.stdout, &tl); err != nil {
		t.Fatalf("timeline --json: %v\n%s", err, r.stdout)
	}
	checkTimelineRows(t, &tl)
	// Cut: the 40 s before the operator's resolution, and the idle hour.
	if len(tl.Gaps) != 2 || tl.Gaps[1].To.Sub(tl.Gaps[1].From) < 59*time.Minute {
		t.Errorf("gaps = %v; want two, the second the idle hour", tl.Gaps)
	}
	if got := tl.Intents[8].ForModel; !strings.Contains(got, "unknown") || !strings.Contains(got, tl.Intents[8].Key) {
		t.Errorf("for_model of the unknown intent = %q; want the harness's unknown text with its key", got)
	}
	if got := tl.Intents[0].ForModel; got != `{"id":"8812"}` {
		t.Errorf("for_model of the success = %q; want its output", got)
	}
	if got := tl.Intents[11].Marks; len(got) != 1 || got[0].Kind != markResolve {
		t.Errorf("marks of the resolved intent = %v; want one resolve mark", got)
	}
	if got := tl.Intents[3].Marks; len(got) != 1 || got[0].Kind != markWait {
		t.Errorf("marks after a 409 = %v; want one wait", got)
	}
	if got := tl.Intents[1].Marks; len(got) != 1 || got[0].Kind != markRetry {
		t.Errorf("marks after maybe-executed = %v; want one retry", got)
	}
}

func checkTimelineRows(t *testing.T, tl *timeline) {
	t.Helper()
	if len(tl.Intents) != len(tlIntents) {
		t.Fatalf("timeline has %d intents; want %d", len(tl.Intents), len(tlIntents))
	}
	for i, want := range tlIntents {
		got := tl.Intents[i]
		if got.Tool != want.tool || got.Status != want.wantStatus || got.Attention != want.wantAttention ||
			got.Reissue != want.wantReissue || joinClasses(got.Attempts) != want.wantClasses {
			t.Errorf("row %d = %s %s attention %q reissue %s classes %s; want %s %s attention %q reissue %s classes %s", i+1,
				got.Tool, got.Status, got.Attention, got.Reissue, joinClasses(got.Attempts),
				want.tool, want.wantStatus, want.wantAttention, want.wantReissue, want.wantClasses)
		}
	}
}

// TestTimelineText checks the terminal timeline: one line per intent, no
// line wider than 80 columns, and the glyphs of the classes in order.
func TestTimelineText(t *testing.T) {
	path := buildTimelineJournal(t)
	r := timelineAt(t, true, "--journal", path, "--session", "demo")
	if r.code != 0 {
		t.Fatalf("timeline = %d, %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	for _, l := range lines {
		if n := len([]rune(l)); n > textWidth {
			t.Errorf("line of %d columns (want at most %d): %q", n, textWidth, l)
		}
	}
	rows := 0
	for _, l := range lines {
		m := regexp.MustCompile(`^ *(\d+) .*\|(.*)\| `).FindStringSubmatch(l)
		if m == nil {
			continue
		}
		rows++
		var i int
		fmt.Sscan(m[1], &i)
		want := tlIntents[i-1]
		var glyphs []rune
		for _, c := range strings.Split(want.wantClasses, ",") {
			glyphs = append(glyphs, classGlyphs[c])
		}
		if !containsInOrder(m[2], glyphs) {
			t.Errorf("row %d bar %q; want the glyphs %q in order", i, m[2], string(glyphs))
		}
		if want.wantAttention != "" && !strings.Contains(l, strings.ToUpper(want.wantStatus)) {
			t.Errorf("row %d %q; want its status in capitals (it needs a look)", i, l)
		}
	}
	if rows != len(tlIntents) {
		t.Errorf("text timeline has %d rows; want %d:\n%s", rows, len(tlIntents), r.stdout)
	}
	golden(t, "timeline_text", r.stdout)

	tsv := timelineAt(t, false, "--journal", path, "--session", "demo")
	if n := strings.Count(tsv.stdout, "\n"); tsv.code != 0 || n != len(tlIntents) {
		t.Errorf("timeline without a terminal = %d, %d lines; want 0, %d", tsv.code, n, len(tlIntents))
	}
}

func containsInOrder(s string, glyphs []rune) bool {
	rs := []rune(s)
	j := 0
	for _, r := range rs {
		if j < len(glyphs) && r == glyphs[j] {
			j++
		}
	}
	return j == len(glyphs)
}

// TestTimelineUsage checks the refusals: no session, a session without
// intents, both outputs at once.
func TestTimelineUsage(t *testing.T) {
	path := buildTimelineJournal(t)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"--journal", path}, exitUsage},
		{[]string{"--journal", path, "--session", "nope"}, exitNotFound},
		{[]string{"--journal", path, "--session", "demo", "--json", "--html", "x.html"}, exitUsage},
		{[]string{"--journal", filepath.Join(t.TempDir(), "missing.db"), "--session", "demo"}, exitNoJournal},
	} {
		if r := timelineAt(t, false, c.args...); r.code != c.code {
			t.Errorf("timeline %v = %d (%s); want %d", c.args, r.code, r.stderr, c.code)
		}
	}
}

// TestTimelineHTMLFile writes the page to a file and checks it is one
// self-contained document: no script, no URL, one row per intent.
func TestTimelineHTMLFile(t *testing.T) {
	path := buildTimelineJournal(t)
	out := filepath.Join(t.TempDir(), "tl.html")
	r := timelineAt(t, false, "--journal", path, "--session", "demo", "--html", out)
	if r.code != 0 || !strings.Contains(r.stdout, out) {
		t.Fatalf("timeline --html = %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, string(page))
	if n := strings.Count(string(page), `<details class="intent`); n != len(tlIntents) {
		t.Errorf("page has %d intent rows; want %d", n, len(tlIntents))
	}
}

// checkSelfContained fails when the page could fetch anything: a script
// from elsewhere, a URL with a scheme, an @import or a link element. Its
// one inline script (filters, copy buttons) is allowed.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	if n, m := strings.Count(page, "<script"), strings.Count(page, "<script>"); n != 1 || m != 1 {
		t.Errorf("page has %d script elements (%d without attributes); want one inline script", n, m)
	}
	for _, bad := range []string{"http:", "https:", "file:", "@import", "<link", "src=", "href=", "@font-face", "fetch(", "XMLHttpRequest", "import("} {
		if i := strings.Index(page, bad); i >= 0 {
			t.Errorf("page contains %q at %d: %q", bad, i, page[max(0, i-40):min(len(page), i+40)])
		}
	}
}

// TestTimelineSVGGolden keeps the structure of the page's SVG (elements,
// classes and data attributes, not coordinates) in a golden file.
func TestTimelineSVGGolden(t *testing.T) {
	path := buildTimelineJournal(t)
	r := timelineAt(t, false, "--journal", path, "--session", "demo", "--html", "-")
	if r.code != 0 {
		t.Fatalf("timeline --html - = %d, %s", r.code, r.stderr)
	}
	golden(t, "timeline_svg", svgStructure(t, r.stdout))
}

// svgStructure parses every <svg> of page as XML and lists its elements,
// indented, with their class and data-* attributes and the text of
// <text> elements.
func svgStructure(t *testing.T, page string) string {
	t.Helper()
	var b strings.Builder
	rest := page
	for {
		i := strings.Index(rest, "<svg")
		if i < 0 {
			break
		}
		j := strings.Index(rest[i:], "</svg>")
		if j < 0 {
			t.Fatalf("unclosed <svg> in the page")
		}
		doc := rest[i : i+j+len("</svg>")]
		rest = rest[i+j:]
		dec := xml.NewDecoder(strings.NewReader(doc))
		depth := 0
		var inText bool
		for {
			tok, err := dec.Token()
			if err != nil {
				if err.Error() == "EOF" {
					break
				}
				t.Fatalf("the page's SVG is not well-formed XML: %v\n%s", err, doc)
			}
			switch tk := tok.(type) {
			case xml.StartElement:
				b.WriteString(strings.Repeat("  ", depth) + tk.Name.Local)
				for _, a := range tk.Attr {
					if a.Name.Local == "class" || strings.HasPrefix(a.Name.Local, "data-") {
						fmt.Fprintf(&b, " %s=%q", a.Name.Local, a.Value)
					}
				}
				inText = tk.Name.Local == "text"
				b.WriteString("\n")
				depth++
			case xml.EndElement:
				depth--
				inText = false
			case xml.CharData:
				if s := strings.TrimSpace(string(tk)); s != "" && inText {
					fmt.Fprintf(&b, "%s%q\n", strings.Repeat("  ", depth), s)
				}
			}
		}
	}
	return b.String()
}
