package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The example runs end to end: the retry and the re-sent call are answered
// with the first charge, the call without scope is refused, and the
// payment API charged once per intent.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, ""); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	// Columns are padded; compare words, not spaces.
	got := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{
		"retry after giving up:",
		`re-sent after reconnecting: succeeded replayed error=false {"charge_id":"ch_1"`,
		`host call without _meta scope: succeeded executed error=false {"charge_id":"ch_2"`,
		`host re-sends after reconnecting: succeeded replayed error=false {"charge_id":"ch_2"`,
		"a note: Note: an identical charge_card call (same input) was made in the last 10m0s",
		`next turn, new charge: succeeded executed error=false {"charge_id":"ch_3"`,
		"charges made by the payment API: 3 (intents: 3)",
		"duplicate side effects: 0",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "retry after giving up:") && (!strings.Contains(line, `succeeded`) || !strings.Contains(line, `"ch_1"`)) {
			t.Errorf("retry line %q; want the first charge's success", line)
		}
	}
}
