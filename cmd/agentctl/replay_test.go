package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
)

func TestReplayGolden(t *testing.T) {
	fx := buildFixture(t)
	r := agentctl(t, true, "replay", "--journal", fx.path, "--session", "s1")
	if r.code != exitReplayBlock || r.stderr != "" {
		t.Fatalf("replay s1 = %d, stderr %q; want %d (blocked) and nothing on stderr", r.code, r.stderr, exitReplayBlock)
	}
	golden(t, "replay-s1", r.stdout)
}

func TestReplayJSON(t *testing.T) {
	fx := buildFixture(t)
	r := agentctl(t, false, "replay", "--session", "s1", "--journal", fx.path, "--json")
	if r.code != exitReplayBlock {
		t.Fatalf("replay = %d, %s", r.code, r.stderr)
	}
	var out replayJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	want := []struct{ name, action string }{
		{fxSearch, actAnswer}, {fxCharge, actBlock}, {fxRefund, actRetry}, {fxEmail, actBlock},
		{fxLookup, actRetry}, {fxBook, actAnswer}, {fxTransfer, actAnswer},
		// A live lease in a bbolt journal: its owner stopped (see
		// previewRecord); TestPostgresMove checks the wait.
		{fxShip, actRetry},
	}
	if len(out.Intents) != len(want) {
		t.Fatalf("replay listed %d intents; want %d", len(out.Intents), len(want))
	}
	for i, w := range want {
		got := out.Intents[i]
		if got.Key != fx.keys[w.name].String() || got.Action != w.action {
			t.Errorf("intent %d = %s %s (%s); want %s %s", i, got.Tool, got.Action, got.Reason, w.name, w.action)
		}
	}
	sum := map[string]int{actAnswer: 3, actRetry: 3, actWait: 0, actBlock: 2, actAnew: 0}
	for k, v := range sum {
		if out.Summary[k] != v {
			t.Errorf("summary[%s] = %d; want %d", k, out.Summary[k], v)
		}
	}
	if !out.At.Equal(testNow) {
		t.Errorf("at = %v; want %v", out.At, testNow)
	}
}

func TestReplayExitCodes(t *testing.T) {
	fx := buildFixture(t)
	tests := []struct {
		args []string
		code int
	}{
		// s2: old is expired (anew), resolved and fponly answered.
		{[]string{"--session", "s2"}, exitReplayRun},
		{[]string{"--session", "s3"}, exitOK},
		{[]string{"--session", "s3", "--tenant", "acme"}, exitNotFound},
		{[]string{"--session", "nope"}, exitNotFound},
		{[]string{}, exitUsage},
		{[]string{"--session", "s1", "--at", "tomorrow"}, exitUsage},
		// A day later ship's lease has expired too (keyed: retry), and
		// every record is still within its 7-day TTL.
		{[]string{"--session", "s1", "--at", testNow.Add(25 * time.Hour).Format(time.RFC3339)}, exitReplayBlock},
		// Eight days later the known outcomes run anew, but an unknown or
		// pending intent never expires into a re-run: still blocked.
		{[]string{"--session", "s1", "--at", testNow.Add(8 * 24 * time.Hour).Format(time.RFC3339)}, exitReplayBlock},
	}
	for _, tt := range tests {
		r := agentctl(t, false, append([]string{"replay", "--journal", fx.path}, tt.args...)...)
		if r.code != tt.code {
			t.Errorf("replay %v = %d (stderr %q); want %d", tt.args, r.code, r.stderr, tt.code)
		}
	}
}

// TestPreviewRecord checks each rule of the preview on its own.
func TestPreviewRecord(t *testing.T) {
	now := testNow
	live, dead := now.Add(time.Minute), now.Add(-time.Minute)
	ttl := now.Add(time.Hour)
	tests := []struct {
		name   string
		state  journal.State
		effect journal.Effect
		lease  time.Time
		exp    time.Time
		class  string
		want   string
	}{
		{"pending live unkeyed", journal.StatePending, journal.Unkeyed, live, ttl, "", actWait},
		{"pending live, record past TTL", journal.StatePending, journal.Unkeyed, live, dead, "", actWait},
		{"pending dead unkeyed", journal.StatePending, journal.Unkeyed, dead, ttl, "", actBlock},
		{"pending dead keyed", journal.StatePending, journal.Keyed, dead, ttl, "", actRetry},
		{"pending dead idempotent", journal.StatePending, journal.Idempotent, dead, ttl, "", actRetry},
		{"pending dead read-only", journal.StatePending, journal.ReadOnly, dead, ttl, "", actRetry},
		{"unknown unkeyed", journal.StateUnknown, journal.Unkeyed, dead, ttl, "", actBlock},
		{"unknown keyed", journal.StateUnknown, journal.Keyed, dead, ttl, "", actRetry},
		{"succeeded", journal.StateSucceeded, journal.Unkeyed, dead, ttl, "", actAnswer},
		{"succeeded expired", journal.StateSucceeded, journal.Unkeyed, dead, dead, "", actAnew},
		{"suppressed", journal.StateSuppressed, journal.Keyed, dead, ttl, "mismatch", actAnswer},
		{"failed terminal", journal.StateFailed, journal.Keyed, dead, ttl, "terminal", actAnswer},
		{"failed not-executed", journal.StateFailed, journal.Unkeyed, dead, ttl, "not-executed", actRetry},
		{"unknown idempotent", journal.StateUnknown, journal.Idempotent, dead, ttl, "", actRetry},
		{"unknown read-only", journal.StateUnknown, journal.ReadOnly, dead, ttl, "", actRetry},
		{"unknown unkeyed past TTL", journal.StateUnknown, journal.Unkeyed, dead, dead, "", actBlock},
		{"unknown keyed past TTL", journal.StateUnknown, journal.Keyed, dead, dead, "", actRetry},
		{"pending dead unkeyed past TTL", journal.StatePending, journal.Unkeyed, dead, dead, "", actBlock},
		{"suppressed in-flight keyed", journal.StateSuppressed, journal.Keyed, dead, ttl, "in-flight", actRetry},
		{"suppressed in-flight unkeyed", journal.StateSuppressed, journal.Unkeyed, dead, ttl, "in-flight", actBlock},
		{"expiry is exclusive", journal.StateSucceeded, journal.Unkeyed, dead, now, "", actAnew},
	}
	for _, tt := range tests {
		r := journal.Record{Key: uuid.New(), State: tt.state, Effect: tt.effect, Lease: journal.Lease{Owner: "o", Expires: tt.lease}, Expires: tt.exp, ErrorClass: tt.class}
		got, reason := previewRecord(&r, now, false)
		if got != tt.want || reason == "" {
			t.Errorf("previewRecord(%s) = %s (%q); want %s", tt.name, got, reason, tt.want)
		}
		// With one writer (bbolt) a live lease is a dead owner's.
		want := tt.want
		if want == actWait {
			want = map[journal.Effect]string{journal.Unkeyed: actBlock}[tt.effect]
			if want == "" {
				want = actRetry
			}
		}
		if got, reason := previewRecord(&r, now, true); got != want {
			t.Errorf("previewRecord(%s, single writer) = %s (%q); want %s", tt.name, got, reason, want)
		}
	}

	// The class of the last attempt: a retaken not-executed failure whose
	// new owner died before its attempt began runs again, even unkeyed;
	// a failure's own class decides for a failed record.
	attempts := []journal.Attempt{{ID: "1", Start: dead, End: dead, Class: "not-executed"}}
	r := journal.Record{State: journal.StatePending, Effect: journal.Unkeyed, Lease: journal.Lease{Expires: dead}, Expires: ttl, Attempts: attempts}
	if got, _ := previewRecord(&r, now, false); got != actRetry {
		t.Errorf("previewRecord(pending unkeyed, last attempt not-executed) = %s; want %s", got, actRetry)
	}
	r = journal.Record{State: journal.StateFailed, Effect: journal.Unkeyed, Expires: ttl, ErrorClass: "terminal", Attempts: attempts}
	if got, _ := previewRecord(&r, now, false); got != actAnswer {
		t.Errorf("previewRecord(failed terminal, an earlier attempt not-executed) = %s; want %s", got, actAnswer)
	}
}

// Issue 23, item 6: an unknown record inside its settle window was
// explained as "o holds the lease until <a time already past>". It must
// name the settle window and its end; a live lease keeps its wording.
func TestPreviewSettleWindow(t *testing.T) {
	now := testNow
	quiet := now.Add(90 * time.Second)
	attempts := []journal.Attempt{{ID: "1", Start: now.Add(-time.Minute), End: now.Add(-50 * time.Second), QuietAt: quiet}}
	for _, tt := range []struct {
		name         string
		state        journal.State
		lease        time.Time
		singleWriter bool
		settle       bool // the reason names the settle window, else the lease
	}{
		{"unknown, lease long past", journal.StateUnknown, now.Add(-time.Minute), false, true},
		{"pending, lease past", journal.StatePending, now.Add(-time.Second), false, true},
		{"pending, a stopped owner's lease (bbolt)", journal.StatePending, now.Add(time.Minute), true, true},
		{"pending, live lease", journal.StatePending, now.Add(time.Minute), false, false},
	} {
		r := journal.Record{Key: uuid.New(), State: tt.state, Effect: journal.Unkeyed, Attempts: attempts,
			Lease: journal.Lease{Owner: "o", Expires: tt.lease}, Expires: now.Add(time.Hour)}
		action, reason := previewRecord(&r, now, tt.singleWriter)
		if action != actWait {
			t.Errorf("previewRecord(%s) = %s (%q); want %s", tt.name, action, reason, actWait)
		}
		named := strings.Contains(reason, "settle window open until "+quiet.UTC().Format(time.RFC3339)) &&
			strings.Contains(reason, "may still be acting downstream") && !strings.Contains(reason, "holds the lease")
		if named != tt.settle {
			t.Errorf("previewRecord(%s) reason = %q; want it to name the settle window: %v", tt.name, reason, tt.settle)
		}
		// The timeline explains a record in the same words.
		if in := buildIntent(&r, now, tt.singleWriter); in.ReissueReason != reason {
			t.Errorf("timeline(%s) reason = %q; want replay's %q", tt.name, in.ReissueReason, reason)
		}
	}
}

func TestReplayBlockedNamesResolve(t *testing.T) {
	fx := buildFixture(t)
	r := agentctl(t, false, "replay", "--journal", fx.path, "--session", "s1")
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "block\t") && !strings.Contains(l, "agentctl resolve "+strings.Split(l, "\t")[1]) {
			t.Errorf("blocked line does not say how to resolve it: %q", l)
		}
	}
}
