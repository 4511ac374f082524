package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
	"github.com/agentonce/agentonce/retryclass"
)

// An intent needs a person when a call records an unknown outcome that
// only a person can settle: an Unkeyed tool without a Reconcile hook, or
// one whose hook cannot tell. The call reports EventNeedsPerson, after
// the outcome is recorded and before its result, with the agentctl
// command, and the Logger says so at Warn. An unknown the harness can
// still settle (a Keyed tool's, retried with the same key on a re-issue)
// and a hook that answers do not.
func TestEventNeedsPerson(t *testing.T) {
	lost := errors.New("the answer was lost")
	unkeyed := func(name string, hook func(context.Context, uuid.UUID, json.RawMessage) downstream.Reconciliation) harness.Tool {
		return harness.Tool{Name: name, Effect: journal.Unkeyed, Timeout: 20 * time.Millisecond, Settle: -1, Reconcile: hook,
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, lost }}
	}
	for _, tc := range []struct {
		tool   harness.Tool
		status harness.Status
		need   bool
	}{
		{unkeyed("no_hook", nil), harness.Unknown, true},
		{unkeyed("cannot_tell", func(context.Context, uuid.UUID, json.RawMessage) downstream.Reconciliation {
			return downstream.CannotTell(errors.New("the provider is down"))
		}), harness.Unknown, true},
		{unkeyed("happened", func(context.Context, uuid.UUID, json.RawMessage) downstream.Reconciliation {
			return downstream.Happened(json.RawMessage(`"sent"`))
		}), harness.Succeeded, false},
		{harness.Tool{Name: "keyed", Effect: journal.Keyed,
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, lost }}, harness.Unknown, false},
	} {
		t.Run(tc.tool.Name, func(t *testing.T) {
			_, st := tempJournal(t)
			var mu sync.Mutex
			var kinds []harness.EventKind
			var needs []harness.Event
			var logs bytes.Buffer
			h := newHarness(t, st, &harness.Options{
				Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
				Observer: harness.ObserverFunc(func(_ context.Context, e harness.Event) {
					mu.Lock()
					defer mu.Unlock()
					kinds = append(kinds, e.Kind)
					if e.Kind == harness.EventNeedsPerson {
						needs = append(needs, e)
					}
				})})
			mustRegister(t, h, tc.tool)
			c := call(tc.tool.Name, `{"to":"ana"}`)
			res := mustCall(t, h, c)
			if res.Status != tc.status {
				t.Fatalf("Call = %v (%v); want %v", res.Status, res.Err, tc.status)
			}
			mu.Lock()
			defer mu.Unlock()
			if !tc.need {
				if len(needs) != 0 {
					t.Errorf("EventNeedsPerson events = %d; want 0 (the harness settles it)", len(needs))
				}
				return
			}
			if len(needs) != 1 {
				t.Fatalf("EventNeedsPerson events = %d; want 1 (events %v)", len(needs), kinds)
			}
			e := needs[0]
			wantCmd := "agentctl resolve " + res.Key.String() + " --succeeded"
			if e.Key != res.Key || e.Tool != tc.tool.Name || e.Session != "s1" || e.Turn != "1" ||
				e.Class != retryclass.MaybeExecuted || e.Err == nil || e.Resolution != nil || !strings.HasPrefix(e.Command, wantCmd) {
				t.Errorf("EventNeedsPerson = %+v; want key %s, tool %s, s1/1, maybe_executed, an error and the command %q…",
					e, res.Key, tc.tool.Name, wantCmd)
			}
			n := len(kinds)
			if n < 3 || kinds[n-3] != harness.EventAfterOutcome || kinds[n-2] != harness.EventNeedsPerson || kinds[n-1] != harness.EventResult {
				t.Errorf("events end %v; want after-outcome, needs-person, result", kinds)
			}
			line := logs.String()
			if strings.Count(line, `"agentonce needs a person`) != 1 || !strings.Contains(line, `"level":"WARN"`) ||
				!strings.Contains(line, `"command":"`+wantCmd) {
				t.Errorf("log = %s; want one Warn line with the command %q…", line, wantCmd)
			}
		})
	}
}

// A re-issue of an intent that needs a person runs nothing. Without a
// Reconcile hook it is answered from the record and reports nothing new;
// with a hook that still cannot tell, the hook is asked again, and the
// need is reported again under the same key.
func TestEventNeedsPersonOnReissue(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hook  func(context.Context, uuid.UUID, json.RawMessage) downstream.Reconciliation
		needs int
	}{
		{"no_hook", nil, 1},
		{"cannot_tell", func(context.Context, uuid.UUID, json.RawMessage) downstream.Reconciliation {
			return downstream.CannotTell(errors.New("the provider is down"))
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, st := tempJournal(t)
			var mu sync.Mutex
			var needs []uuid.UUID
			runs := 0
			h := newHarness(t, st, &harness.Options{Logger: slog.New(slog.DiscardHandler),
				Observer: harness.ObserverFunc(func(_ context.Context, e harness.Event) {
					if e.Kind == harness.EventNeedsPerson {
						mu.Lock()
						needs = append(needs, e.Key)
						mu.Unlock()
					}
				})})
			mustRegister(t, h, harness.Tool{Name: "send", Effect: journal.Unkeyed, Timeout: 20 * time.Millisecond, Settle: -1,
				Reconcile: tc.hook, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
					runs++
					return nil, errors.New("the answer was lost")
				}})
			c := call("send", `{}`)
			first := mustCall(t, h, c)
			// Until the attempt's quiet time the record is answered as it is.
			rec, err := st.Get(context.Background(), first.Key)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Until(reissue.QuietAt(&rec)) + time.Millisecond)
			again := mustCall(t, h, c)
			if first.Status != harness.Unknown || again.Status != harness.Unknown || runs != 1 {
				t.Fatalf("calls = %v, %v with %d runs; want unknown twice, one run", first.Status, again.Status, runs)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(needs) != tc.needs || needs[len(needs)-1] != first.Key {
				t.Errorf("EventNeedsPerson keys = %v; want %s %d times", needs, first.Key, tc.needs)
			}
		})
	}
}
