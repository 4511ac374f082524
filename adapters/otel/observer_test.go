package otel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentonce/agentonce"
	agentotel "github.com/agentonce/agentonce/adapters/otel"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// fixture is a real Harness on a bbolt journal whose Observer records into
// the SDK's in-memory span recorder and manual metric reader.
type fixture struct {
	h      *harness.Harness
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	// answered receives every EventResult, after the Observer saw it.
	answered chan harness.Event
}

func newFixture(t *testing.T, tools ...harness.Tool) *fixture {
	t.Helper()
	f := &fixture{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader(), answered: make(chan harness.Event, 64)}
	obs, err := agentotel.New(&agentotel.Options{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(f.spans)),
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(f.reader)),
	})
	if err != nil {
		t.Fatal(err)
	}
	f.h, err = agentonce.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"), &agentonce.OpenOptions{Options: harness.Options{
		Observer: harness.ObserverFunc(func(ctx context.Context, e harness.Event) {
			obs.Observe(ctx, e)
			if e.Kind == harness.EventResult {
				f.answered <- e
			}
		}),
		Retry: &retryclass.Policy{MaxAttempts: 5, InitialInterval: -1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.h.Close() })
	if err := f.h.Register(tools...); err != nil {
		t.Fatal(err)
	}
	return f
}

// calls returns the ended call spans (not attempts), in end order.
func (f *fixture) calls() []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range f.spans.Ended() {
		if strings.HasPrefix(s.Name(), "execute_tool ") {
			out = append(out, s)
		}
	}
	return out
}

// children returns the ended spans whose parent is s.
func (f *fixture) children(s sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, c := range f.spans.Ended() {
		if c.Parent().SpanID() == s.SpanContext().SpanID() {
			out = append(out, c)
		}
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, k attribute.Key) string {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value.Emit()
		}
	}
	return ""
}

func eventNames(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, e := range s.Events() {
		out = append(out, e.Name)
	}
	return out
}

func (f *fixture) collect(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := f.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// total sums the data points of the named counter (or the counts of the
// named histogram) whose attributes include every kv in match.
func total(rm metricdata.ResourceMetrics, name string, match ...attribute.KeyValue) int64 {
	var n int64
	has := func(set attribute.Set) bool {
		for _, kv := range match {
			if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
				return false
			}
		}
		return true
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if has(p.Attributes) {
						n += p.Value
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if has(p.Attributes) {
						n += int64(p.Count)
					}
				}
			}
		}
	}
	return n
}

func call(tool, input string) harness.ToolCall {
	return harness.ToolCall{Tenant: "acme", Session: "s1", Turn: "1", Tool: tool, Input: json.RawMessage(input)}
}

// flaky fails with a provably-not-executed error until it has failed
// fails times, then succeeds; runs counts its runs (the side effects).
func flaky(name string, fails int64, runs *atomic.Int64) harness.Tool {
	return harness.Tool{Name: name, Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			if n := runs.Add(1); n <= fails {
				return nil, retryclass.MarkNotExecuted(errors.New("connection refused"))
			}
			return json.RawMessage(`{"charge_id":"ch_SECRET_OUTPUT"}`), nil
		}}
}

// One call that is retried twice is one span with three attempt children
// and two retry events; its replay is a second span; the metrics count
// both calls, three attempts and two retries.
func TestCallSpanAttemptsAndMetrics(t *testing.T) {
	var runs atomic.Int64
	f := newFixture(t, flaky("charge", 2, &runs))
	if res := f.h.Call(context.Background(), call("charge", `{"card":"4111-SECRET-INPUT"}`)); !res.OK() {
		t.Fatalf("Call = %v; want success", res.Err)
	}
	if res := f.h.Call(context.Background(), call("charge", `{"card":"4111-SECRET-INPUT"}`)); res.Source != harness.Replayed {
		t.Fatalf("second Call source = %v; want replayed", res.Source)
	}
	if n := runs.Load(); n != 3 {
		t.Fatalf("tool runs = %d; want 3", n)
	}
	spans := f.calls()
	if len(spans) != 2 {
		t.Fatalf("call spans = %d; want 2", len(spans))
	}
	first, replay := spans[0], spans[1]
	for _, c := range []struct {
		span                     sdktrace.ReadOnlySpan
		status, source, attempts string
	}{
		{first, "succeeded", "executed", "3"},
		{replay, "succeeded", "replayed", "3"},
	} {
		got := [3]string{attr(c.span, agentotel.AttrStatus), attr(c.span, agentotel.AttrSource), attr(c.span, agentotel.AttrAttempts)}
		if want := [3]string{c.status, c.source, c.attempts}; got != want {
			t.Errorf("span %s status, source, attempts = %v; want %v", c.span.Name(), got, want)
		}
		if c.span.Name() != "execute_tool charge" || attr(c.span, agentotel.AttrTool) != "charge" || attr(c.span, agentotel.AttrKey) == "" {
			t.Errorf("span %q tool %q key %q; want execute_tool charge, charge, a key", c.span.Name(), attr(c.span, agentotel.AttrTool), attr(c.span, agentotel.AttrKey))
		}
		if c.span.Status().Code == codes.Error {
			t.Errorf("span %s status = Error; want unset for a success", c.span.Name())
		}
	}
	attempts := f.children(first)
	if len(attempts) != 3 {
		t.Fatalf("attempt spans = %d; want 3", len(attempts))
	}
	failed := 0
	for _, a := range attempts {
		if a.Status().Code == codes.Error {
			failed++
		}
	}
	if failed != 2 {
		t.Errorf("failed attempt spans = %d; want 2", failed)
	}
	if got, want := strings.Join(eventNames(first), ","), "retry,retry,outcome_recorded"; got != want {
		t.Errorf("span events = %s; want %s", got, want)
	}
	if len(f.children(replay)) != 0 {
		t.Errorf("replay span has %d children; want 0", len(f.children(replay)))
	}

	rm := f.collect(t)
	for _, c := range []struct {
		name  string
		match []attribute.KeyValue
		want  int64
	}{
		{agentotel.MetricCalls, []attribute.KeyValue{agentotel.AttrSource.String("executed"), agentotel.AttrStatus.String("succeeded")}, 1},
		{agentotel.MetricCalls, []attribute.KeyValue{agentotel.AttrSource.String("replayed")}, 1},
		{agentotel.MetricCalls, nil, 2},
		{agentotel.MetricAttempts, []attribute.KeyValue{agentotel.AttrTool.String("charge")}, 3},
		{agentotel.MetricRetries, []attribute.KeyValue{agentotel.AttrClass.String("not-executed")}, 2},
		{agentotel.MetricDuration, []attribute.KeyValue{agentotel.AttrSource.String("executed")}, 1},
	} {
		if got := total(rm, c.name, c.match...); got != c.want {
			t.Errorf("%s%v = %d; want %d", c.name, c.match, got, c.want)
		}
	}
	assertAllEnded(t, f)
	assertNoSecrets(t, f, rm)
}

// Identical calls in one model response collapse: one executed span with
// the attempt, one collapsed span without, and the tool ran once.
func TestCollapsedCall(t *testing.T) {
	var runs atomic.Int64
	f := newFixture(t, flaky("charge", 0, &runs))
	res := f.h.CallAll(context.Background(), []harness.ToolCall{call("charge", `{"a":1}`), call("charge", `{"a":1}`)})
	if res[0].Source != harness.Executed || res[1].Source != harness.Collapsed {
		t.Fatalf("sources = %v, %v; want executed, collapsed", res[0].Source, res[1].Source)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("tool runs = %d; want 1", n)
	}
	bySource := map[string]int{}
	for _, s := range f.calls() {
		bySource[attr(s, agentotel.AttrSource)] += 1 + 10*len(f.children(s))
	}
	// 11: one span with one attempt child; 1: one span without children.
	if bySource["executed"] != 11 || bySource["collapsed"] != 1 || len(bySource) != 2 {
		t.Errorf("spans by source (1 + 10 per child) = %v; want executed:11 collapsed:1", bySource)
	}
	rm := f.collect(t)
	if got := total(rm, agentotel.MetricCalls, agentotel.AttrSource.String("collapsed")); got != 1 {
		t.Errorf("collapsed calls = %d; want 1", got)
	}
	if got := total(rm, agentotel.MetricAttempts); got != 1 {
		t.Errorf("attempts = %d; want 1", got)
	}
	assertAllEnded(t, f)
}

// A caller that stops waiting while the tool runs gets an in-progress span
// of its own; the flight's span stays open until the tool answers, and
// then holds the attempt and the success.
func TestCallerLeavesRunningFlight(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int64
	tool := harness.Tool{Name: "slow", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			close(started)
			<-release
			return json.RawMessage(`{"ok":true}`), nil
		}}
	f := newFixture(t, tool)
	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan harness.Result, 1)
	go func() { left <- f.h.Call(ctx, call("slow", `{}`)) }()
	<-started
	cancel()
	if res := <-left; res.Status != harness.InProgress {
		t.Fatalf("Call after the caller left = %v; want in-progress", res.Status)
	}
	<-f.answered // the caller's
	// The flight has no waiter left; a tool that ignores its context still
	// answers, and the flight records it.
	close(release)
	<-f.answered // the flight's
	var got []string
	for _, s := range f.calls() {
		got = append(got, attr(s, agentotel.AttrStatus)+"/"+attr(s, agentotel.AttrSource)+"/"+string(rune('0'+len(f.children(s)))))
	}
	if strings.Join(got, " ") != "in-progress/executed/0 succeeded/executed/1" {
		t.Errorf("call spans (status/source/children) = %v; want [in-progress/executed/0 succeeded/executed/1]", got)
	}
	assertAllEnded(t, f)
}

// An unjournaled ReadOnly tool emits no attempt events; its attempts are
// counted from its answer, and a failure is an Error span.
func TestUnjournaledTool(t *testing.T) {
	var runs atomic.Int64
	tool := harness.Tool{Name: "lookup", Effect: journal.ReadOnly,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			if runs.Add(1) < 3 {
				return nil, retryclass.MarkNotExecuted(errors.New("connection refused"))
			}
			return nil, retryclass.Permanent(errors.New("no such customer SECRET"))
		}}
	f := newFixture(t, tool)
	if res := f.h.Call(context.Background(), call("lookup", `{}`)); res.Status != harness.Failed {
		t.Fatalf("Call = %v; want failed", res.Status)
	}
	spans := f.calls()
	if len(spans) != 1 || attr(spans[0], agentotel.AttrStatus) != "failed" || spans[0].Status().Code != codes.Error {
		t.Fatalf("spans = %d (status %q); want one failed Error span", len(spans), attr(spans[0], agentotel.AttrStatus))
	}
	if got, want := strings.Join(eventNames(spans[0]), ","), "retry,retry"; got != want {
		t.Errorf("span events = %s; want %s", got, want)
	}
	rm := f.collect(t)
	if got := total(rm, agentotel.MetricAttempts); got != 3 {
		t.Errorf("attempts = %d; want 3", got)
	}
	if got := total(rm, agentotel.MetricRetries); got != 2 {
		t.Errorf("retries = %d; want 2", got)
	}
	assertAllEnded(t, f)
	assertNoSecrets(t, f, rm)
}

func assertAllEnded(t *testing.T, f *fixture) {
	t.Helper()
	if s, e := len(f.spans.Started()), len(f.spans.Ended()); s != e {
		t.Errorf("spans started %d, ended %d; want all ended", s, e)
	}
}

// assertNoSecrets fails if any span name, attribute, event or metric
// attribute holds text from a tool's input, output or error.
func assertNoSecrets(t *testing.T, f *fixture, rm metricdata.ResourceMetrics) {
	t.Helper()
	check := func(where, s string) {
		if strings.Contains(s, "SECRET") {
			t.Errorf("%s holds tool data: %q", where, s)
		}
	}
	for _, s := range f.spans.Ended() {
		check("span name", s.Name())
		check("span status", s.Status().Description)
		for _, kv := range s.Attributes() {
			check("span attribute "+string(kv.Key), kv.Value.Emit())
		}
		for _, e := range s.Events() {
			check("event name", e.Name)
			for _, kv := range e.Attributes {
				check("event attribute "+string(kv.Key), kv.Value.Emit())
			}
		}
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if d, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, p := range d.DataPoints {
					for _, kv := range p.Attributes.ToSlice() {
						check("metric attribute "+string(kv.Key), kv.Value.Emit())
					}
				}
			}
		}
	}
}

// Many goroutines calling a few keys at once: every span ends and every
// call is counted once, whatever the matching by key did.
func TestConcurrentCalls(t *testing.T) {
	var runs atomic.Int64
	f := newFixture(t, flaky("charge", 0, &runs))
	go func() {
		for range f.answered { // nobody else reads it here
		}
	}()
	const goroutines, perG = 8, 20
	var done atomic.Int64
	finished := make(chan struct{})
	for g := range goroutines {
		go func() {
			for i := range perG {
				in := `{"n":` + string(rune('0'+(g+i)%3)) + `}`
				if i%2 == 0 {
					f.h.CallAll(context.Background(), []harness.ToolCall{call("charge", in), call("charge", in)})
					done.Add(2)
				} else {
					f.h.Call(context.Background(), call("charge", in))
					done.Add(1)
				}
			}
			finished <- struct{}{}
		}()
	}
	for range goroutines {
		<-finished
	}
	if n := runs.Load(); n != 3 {
		t.Errorf("tool runs = %d; want 3 (one per distinct input)", n)
	}
	if got := int64(len(f.calls())); got != done.Load() {
		t.Errorf("call spans = %d; want %d", got, done.Load())
	}
	if got := total(f.collect(t), agentotel.MetricCalls); got != done.Load() {
		t.Errorf("%s = %d; want %d", agentotel.MetricCalls, got, done.Load())
	}
	assertAllEnded(t, f)
}

// Every call span carries the GenAI conventions' attributes: the model's
// call id (each collapsed or replayed call its own), the registered tool's
// description and type; a failed call and its failed attempt carry
// error.type, the retry class.
func TestGenAIConventions(t *testing.T) {
	var runs atomic.Int64
	tool := harness.Tool{Name: "refund", Description: "Refund a charge.", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			return nil, retryclass.Permanent(errors.New("card SECRET declined"))
		}}
	f := newFixture(t, tool)
	first, second, third := call("refund", `{"a":1}`), call("refund", `{"a":1}`), call("refund", `{"a":1}`)
	first.ID, second.ID, third.ID = "call_first", "call_second", "call_third"
	res := f.h.CallAll(context.Background(), []harness.ToolCall{first, second})
	if res[0].Status != harness.Failed || res[1].Source != harness.Collapsed {
		t.Fatalf("CallAll = %v/%v, %v/%v; want failed/executed, failed/collapsed", res[0].Status, res[0].Source, res[1].Status, res[1].Source)
	}
	if res := f.h.Call(context.Background(), third); res.Source != harness.Replayed {
		t.Fatalf("third Call source = %v; want replayed", res.Source)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("tool runs = %d; want 1", n)
	}
	ids := map[string]string{}
	for _, s := range f.calls() {
		ids[attr(s, agentotel.AttrSource)] = attr(s, agentotel.AttrCallID)
		if got := attr(s, agentotel.AttrDescription); got != "Refund a charge." {
			t.Errorf("%s span %s = %q; want the tool's description", attr(s, agentotel.AttrSource), agentotel.AttrDescription, got)
		}
		if got := attr(s, agentotel.AttrToolType); got != "function" {
			t.Errorf("%s span %s = %q; want function", attr(s, agentotel.AttrSource), agentotel.AttrToolType, got)
		}
		if got := attr(s, agentotel.AttrErrorType); got != "terminal" || s.Status().Code != codes.Error {
			t.Errorf("%s span %s = %q, status %v; want terminal, Error", attr(s, agentotel.AttrSource), agentotel.AttrErrorType, got, s.Status().Code)
		}
		for _, a := range f.children(s) {
			if got := attr(a, agentotel.AttrErrorType); got != "terminal" {
				t.Errorf("attempt span %s = %q; want terminal", agentotel.AttrErrorType, got)
			}
		}
	}
	want := map[string]string{"executed": "call_first", "collapsed": "call_second", "replayed": "call_third"}
	if fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("call ids by source = %v; want %v", ids, want)
	}
	assertAllEnded(t, f)
	assertNoSecrets(t, f, f.collect(t))
}

// A call refused before its tool is found carries its call id and error.type
// "rejected" (it has no retry class).
func TestRejectedCallErrorType(t *testing.T) {
	f := newFixture(t, flaky("charge", 0, new(atomic.Int64)))
	c := call("nosuch", `{}`)
	c.ID = "call_x"
	if res := f.h.Call(context.Background(), c); res.Status != harness.Rejected {
		t.Fatalf("Call = %v; want rejected", res.Status)
	}
	spans := f.calls()
	if len(spans) != 1 {
		t.Fatalf("spans = %d; want 1", len(spans))
	}
	if got := [2]string{attr(spans[0], agentotel.AttrCallID), attr(spans[0], agentotel.AttrErrorType)}; got != [2]string{"call_x", "rejected"} {
		t.Errorf("call id, error.type = %q; want call_x, rejected", got)
	}
}
