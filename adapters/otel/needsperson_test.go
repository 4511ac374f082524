package otel_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/agentonce/agentonce"
	agentotel "github.com/agentonce/agentonce/adapters/otel"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/inspect"
	"github.com/agentonce/agentonce/journal"
)

// A call that ends needing a person carries a needs_person event on its
// span and counts agentonce.needs_person; the operator's resolve through
// the agent's socket is a span of its own, agentonce.resolved, and counts
// agentonce.resolved with its resolution.
func TestNeedsPerson(t *testing.T) {
	sent := 0
	f := newFixture(t, harness.Tool{Name: "send_email", Effect: journal.Unkeyed, Timeout: time.Second,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			sent++
			return nil, errors.New("the mail server hung up after DATA")
		}})
	ctx := context.Background()
	res := f.h.Call(ctx, call("send_email", `{"to":"ana"}`))
	if res.Status != harness.Unknown || sent != 1 {
		t.Fatalf("Call = %v (%v), %d sent; want unknown, 1 sent", res.Status, res.Err, sent)
	}
	spans := f.calls()
	if len(spans) != 1 {
		t.Fatalf("call spans = %d; want 1", len(spans))
	}
	if ev := eventNames(spans[0]); !slices.Contains(ev, "needs_person") {
		t.Errorf("call span events = %v; want a needs_person event", ev)
	}
	c, err := inspect.Dial(ctx, agentonce.InspectSocket(f.h))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Resolve(ctx, res.Key, journal.Resolution{State: journal.StateFailed, By: "ops", Reason: "not in the mail log"}); err != nil {
		t.Fatal(err)
	}
	var resolved []string
	for _, s := range f.spans.Ended() {
		if s.Name() == "agentonce.resolved" {
			resolved = append(resolved, attr(s, agentotel.AttrKey)+" "+attr(s, agentotel.AttrTool)+" "+attr(s, agentotel.AttrResolution))
		}
	}
	if want := res.Key.String() + " send_email failed"; len(resolved) != 1 || resolved[0] != want {
		t.Errorf("agentonce.resolved spans = %q; want one, %q", resolved, want)
	}
	rm := f.collect(t)
	tool := attribute.String(string(agentotel.AttrTool), "send_email")
	if n := total(rm, agentotel.MetricNeedsPerson, tool); n != 1 {
		t.Errorf("%s = %d; want 1", agentotel.MetricNeedsPerson, n)
	}
	if n := total(rm, agentotel.MetricResolved, tool, agentotel.AttrResolution.String("failed")); n != 1 {
		t.Errorf("%s = %d; want 1", agentotel.MetricResolved, n)
	}
}
