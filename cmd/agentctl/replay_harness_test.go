package main

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/retryclass"
)

// TestReplayAgreesWithHarness checks the preview against the real thing:
// after "agentctl replay", the harness re-issues every recorded call of the
// fixture on the same journal at the same instant, and each call does what
// the preview said: answer and block do not run the tool (block answers
// unknown), wait does not run it (suppressed: in progress), retry and anew
// run it exactly once.
func TestReplayAgreesWithHarness(t *testing.T) {
	fx := buildFixture(t)
	preview := map[string]string{} // key → action
	for _, session := range []string{"s1", "s2", "s3"} {
		r := agentctl(t, false, "replay", "--journal", fx.path, "--session", session, "--json")
		var out replayJSON
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("replay %s: %v (%s)", session, err, r.stderr)
		}
		for _, in := range out.Intents {
			preview[in.Key] = in.Action
		}
	}
	if len(preview) != fixtureSize {
		t.Fatalf("previewed %d intents; want %d", len(preview), fixtureSize)
	}

	s, err := bolt.Open(fx.path, &bolt.Options{Journal: journal.Options{Now: func() time.Time { return testNow }}})
	if err != nil {
		t.Fatal(err)
	}
	h := harness.New(s, &harness.Options{Owner: "restarted", Retry: &retryclass.Policy{MaxAttempts: 1, InFlightBudget: -1}})
	defer func() { h.Close(); s.Close() }()
	runs := map[string]*atomic.Int32{}
	for _, in := range fixtureIntents {
		if runs[in.tool] != nil {
			continue
		}
		n := &atomic.Int32{}
		runs[in.tool] = n
		err := h.Register(harness.Tool{Name: in.tool, Effect: in.effect, Journal: true,
			Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				n.Add(1)
				return json.RawMessage(`{"ok":true}`), nil
			}})
		if err != nil {
			t.Fatal(err)
		}
	}

	for _, in := range fixtureIntents {
		key := fx.keys[in.name].String()
		before := runs[in.tool].Load()
		res := h.Call(context.Background(), harness.ToolCall{Tenant: in.tenant, Session: in.session, Turn: in.turn, Tool: in.tool, Input: json.RawMessage(in.input)})
		if res.Status == harness.Rejected {
			t.Fatalf("Call(%s): %v", in.name, res.Err)
		}
		if res.Key.String() != key {
			t.Fatalf("Call(%s) key %s; want %s", in.name, res.Key, key)
		}
		ran := runs[in.tool].Load() - before
		action := preview[key]
		var ok bool
		switch action {
		case actAnswer:
			ok = ran == 0 && res.Status != harness.Unknown
		case actBlock:
			ok = ran == 0 && res.Status == harness.Unknown
		case actWait:
			ok = ran == 0 && res.Status == harness.Suppressed
		case actRetry, actAnew:
			ok = ran == 1
		}
		if !ok {
			t.Errorf("%s: replay said %s; the harness ran the tool %d times, status %v", in.name, action, ran, res.Status)
		}
	}
}
