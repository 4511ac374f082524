package harness_test

import (
	"context"
	"encoding/json"
	"log"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

// logLines is a log's destination in a test: slog's handlers write from
// any goroutine, and the test reads it.
type logLines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// about returns the lines that mention s.
func (l *logLines) about(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.b.String(), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// captureDefaultLog makes slog.Default() write text lines, every level,
// to the returned log until the test ends; the log package's output,
// which slog.SetDefault redirects, is restored too.
func captureDefaultLog(t *testing.T) *logLines {
	var l logLines
	old, out, flags := slog.Default(), log.Writer(), log.Flags()
	slog.SetDefault(slog.New(slog.NewTextHandler(&l, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() {
		slog.SetDefault(old)
		log.SetOutput(out)
		log.SetFlags(flags)
	})
	return &l
}

// countingTool is a Keyed tool named name that counts its runs.
func countingTool(name string, runs *effects) harness.Tool {
	return harness.Tool{Name: name, Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			runs.do(ctx)
			return json.RawMessage(`{"ok":true}`), nil
		}}
}

// Each refused call is one line at Warn saying why, and runs nothing; a
// call that succeeds, or is replayed, writes no line at Warn.
func TestRefusedCallIsLoggedAtWarn(t *testing.T) {
	_, st := tempJournal(t)
	var lines logLines
	h := newHarness(t, st, &harness.Options{Logger: slog.New(slog.NewTextHandler(&lines, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	var runs effects
	mustRegister(t, h, countingTool("refund", &runs))
	ok := call("refund", `{"order":"A-1"}`)
	mustCall(t, h, ok)
	mustCall(t, h, ok) // replayed
	if got := lines.about("refund"); len(got) != 0 {
		t.Errorf("a call and its replay logged %q at Warn; want nothing", got)
	}
	for _, tc := range []struct {
		name string
		c    harness.ToolCall
		why  string // in the line
	}{
		{"no turn", harness.ToolCall{Session: "s1", Tool: "refund", Input: json.RawMessage(`{}`)}, harness.ErrNoTurn.Error()},
		{"unknown tool", call("refnud", `{}`), `unknown tool \"refnud\"`},
		{"invalid input", call("refund", `{"order":`), harness.ErrInvalidInput.Error()},
	} {
		before := len(lines.about("agentonce"))
		if res := h.Call(context.Background(), tc.c); res.Status != harness.Rejected {
			t.Errorf("%s: Status = %v; want Rejected", tc.name, res.Status)
		}
		got := lines.about("agentonce")[before:]
		if len(got) != 1 || !strings.Contains(got[0], "level=WARN") || !strings.Contains(got[0], tc.why) {
			t.Errorf("%s: logged %q; want one line at Warn saying %q", tc.name, got, tc.why)
		}
	}
	if n := runs.all(); n != 1 {
		t.Errorf("the tool ran %d times; want 1 (the refused calls run nothing)", n)
	}
}

// With no Logger, a refused call (from Call or CallAll) still reaches
// slog.Default() at Warn, and nothing else does; a discarding Logger
// silences it.
func TestRefusedCallReachesDefaultLogger(t *testing.T) {
	lines := captureDefaultLog(t)
	_, st := tempJournal(t)
	h := newHarness(t, st, nil)
	var runs effects
	mustRegister(t, h, countingTool("quiet_refund", &runs))
	ok := call("quiet_refund", `{"order":"A-1"}`)
	mustCall(t, h, ok)
	mustCall(t, h, ok)
	noTurn := ok
	noTurn.Turn = ""
	h.Call(context.Background(), noTurn)
	h.CallAll(context.Background(), []harness.ToolCall{ok, noTurn})
	got := lines.about("quiet_refund")
	if len(got) != 2 {
		t.Fatalf("slog.Default() got %q; want two lines, one per refused call, none for the others", got)
	}
	for _, l := range got {
		if !strings.Contains(l, "level=WARN") || !strings.Contains(l, harness.ErrNoTurn.Error()) {
			t.Errorf("slog.Default() got %q; want a warning naming %q", l, harness.ErrNoTurn)
		}
	}
	if n := runs.all(); n != 1 {
		t.Errorf("the tool ran %d times; want 1", n)
	}

	quiet := newHarness(t, st, &harness.Options{Logger: slog.New(slog.DiscardHandler)})
	mustRegister(t, quiet, countingTool("silenced", &runs))
	noTurn.Tool = "silenced"
	quiet.Call(context.Background(), noTurn)
	if got := lines.about("silenced"); len(got) != 0 {
		t.Errorf("with a discarding Logger, slog.Default() got %q; want nothing", got)
	}
}
