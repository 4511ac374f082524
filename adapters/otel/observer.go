package otel

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
	otelglobal "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/retryclass"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/agentonce/agentonce/adapters/otel"

// Attribute keys. The gen_ai.* and error.type keys are those of the
// OpenTelemetry GenAI conventions for an execute_tool span; the rest are
// agentonce's own.
const (
	AttrOperation   = attribute.Key("gen_ai.operation.name") // always "execute_tool"
	AttrTool        = attribute.Key("gen_ai.tool.name")
	AttrToolType    = attribute.Key("gen_ai.tool.type") // always "function"
	AttrCallID      = attribute.Key("gen_ai.tool.call.id")
	AttrDescription = attribute.Key("gen_ai.tool.description")
	// AttrErrorType is set on every span whose status is Error: the retry
	// class of the failure, or the call's status when it has no class
	// (a rejected or suppressed call).
	AttrErrorType = attribute.Key("error.type")
	AttrKey       = attribute.Key("agentonce.key")
	AttrStatus    = attribute.Key("agentonce.status")
	AttrSource    = attribute.Key("agentonce.source")
	AttrAttempts  = attribute.Key("agentonce.attempts")
	AttrAttempt   = attribute.Key("agentonce.attempt.id")
	AttrClass     = attribute.Key("agentonce.retry_class")
	AttrDelay     = attribute.Key("agentonce.delay_ms")
	// AttrResolution is the state an operator's resolve recorded
	// ("succeeded" or "failed").
	AttrResolution = attribute.Key("agentonce.resolution")
)

// Metric names.
const (
	MetricCalls    = "agentonce.calls"
	MetricAttempts = "agentonce.attempts"
	MetricRetries  = "agentonce.retries"
	MetricDuration = "agentonce.call.duration"
	// MetricNeedsPerson counts the intents that came to need a person
	// (harness.EventNeedsPerson), by tool; MetricResolved those an
	// operator resolved through this process, by tool and resolution.
	// Their difference over a window is the backlog's growth; agentctl
	// queue lists the backlog itself.
	MetricNeedsPerson = "agentonce.needs_person"
	MetricResolved    = "agentonce.resolved"
)

// Options configure an Observer. A nil *Options means every default.
type Options struct {
	// TracerProvider makes the tracer; nil means the global one
	// (otel.GetTracerProvider).
	TracerProvider trace.TracerProvider
	// MeterProvider makes the meter; nil means the global one
	// (otel.GetMeterProvider).
	MeterProvider metric.MeterProvider
}

// Observer is a harness.Observer that records each call as a span and
// counts calls, attempts and retries. Set it as harness.Options.Observer.
// It is safe for concurrent use; its zero value is not usable (use New).
type Observer struct {
	tracer   trace.Tracer
	calls    metric.Int64Counter
	attempts metric.Int64Counter
	retries  metric.Int64Counter
	duration metric.Float64Histogram
	needs    metric.Int64Counter
	resolved metric.Int64Counter

	mu sync.Mutex
	// open holds the spans of calls that started and are not answered yet,
	// by key, the latest last. Guarded by mu.
	open map[uuid.UUID][]*span
}

// span is one call's span and its attempt in progress.
type span struct {
	trace.Span
	ctx   context.Context // carries Span, for attempt spans
	start time.Time
	// journaled says the span began at EventBeforeWriteAhead; an
	// unjournaled tool's first event comes after its first attempt.
	journaled bool
	attempt   trace.Span // nil between attempts; guarded by Observer.mu
}

// New returns an Observer that uses opts' providers. It fails only if an
// instrument cannot be made.
func New(opts *Options) (*Observer, error) {
	var tp trace.TracerProvider
	var mp metric.MeterProvider
	if opts != nil {
		tp, mp = opts.TracerProvider, opts.MeterProvider
	}
	if tp == nil {
		tp = otelglobal.GetTracerProvider()
	}
	if mp == nil {
		mp = otelglobal.GetMeterProvider()
	}
	m := mp.Meter(ScopeName)
	o := &Observer{tracer: tp.Tracer(ScopeName), open: make(map[uuid.UUID][]*span)}
	var err error
	if o.calls, err = m.Int64Counter(MetricCalls, metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls answered, by tool, status and source.")); err != nil {
		return nil, err
	}
	if o.attempts, err = m.Int64Counter(MetricAttempts, metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts this process started (each ran the tool or its transaction), by tool.")); err != nil {
		return nil, err
	}
	if o.retries, err = m.Int64Counter(MetricRetries, metric.WithUnit("{retry}"),
		metric.WithDescription("Failed attempts the harness retried, by tool and retry class.")); err != nil {
		return nil, err
	}
	if o.duration, err = m.Float64Histogram(MetricDuration, metric.WithUnit("s"),
		metric.WithDescription("Time from a call's first event to its answer, for journaled calls that ran their own flight, by tool, status and source.")); err != nil {
		return nil, err
	}
	if o.needs, err = m.Int64Counter(MetricNeedsPerson, metric.WithUnit("{intent}"),
		metric.WithDescription("Intents that came to need a person (an unknown outcome only a person can settle), by tool.")); err != nil {
		return nil, err
	}
	if o.resolved, err = m.Int64Counter(MetricResolved, metric.WithUnit("{intent}"),
		metric.WithDescription("Intents an operator resolved through this process, by tool and resolution.")); err != nil {
		return nil, err
	}
	return o, nil
}

// Observe records e. See the package documentation for what each event
// becomes.
func (o *Observer) Observe(ctx context.Context, e harness.Event) {
	switch e.Kind {
	case harness.EventBeforeWriteAhead:
		o.push(ctx, e, true)
	case harness.EventResult:
		o.result(ctx, e)
	case harness.EventAfterWriteAhead:
		o.attemptStarted(ctx, e)
	case harness.EventAfterEffect:
		o.attemptEnded(ctx, e)
	case harness.EventRetry:
		o.retries.Add(ctx, 1, metric.WithAttributes(AttrTool.String(e.Tool), AttrClass.String(e.Class.String())))
		o.spanEvent(ctx, e, "retry")
	case harness.EventInFlight:
		o.spanEvent(ctx, e, "in_flight_wait")
	case harness.EventSettle:
		o.spanEvent(ctx, e, "settle_wait")
	case harness.EventReconcile:
		o.spanEvent(ctx, e, "reconcile")
	case harness.EventTakeover:
		o.spanEvent(ctx, e, "takeover")
	case harness.EventAfterOutcome:
		o.spanEvent(ctx, e, "outcome_recorded")
	case harness.EventNeedsPerson:
		o.needsPerson(ctx, e)
	}
}

// needsPerson counts an intent that came to need a person, as an event on
// its call's span, or its resolve, outside any call, as a span of its own.
func (o *Observer) needsPerson(ctx context.Context, e harness.Event) {
	tool := AttrTool.String(e.Tool)
	if r := e.Resolution; r != nil {
		state := AttrResolution.String(r.State.String())
		o.resolved.Add(ctx, 1, metric.WithAttributes(tool, state))
		_, s := o.tracer.Start(ctx, "agentonce.resolved", trace.WithAttributes(tool, AttrKey.String(e.Key.String()), state))
		s.End()
		return
	}
	o.needs.Add(ctx, 1, metric.WithAttributes(tool))
	o.spanEvent(ctx, e, "needs_person")
}

// start starts a call's span. journaled says the call began with
// EventBeforeWriteAhead, so its start time is the call's.
func (o *Observer) start(ctx context.Context, e harness.Event, journaled bool) *span {
	now := time.Now()
	attrs := []attribute.KeyValue{AttrOperation.String("execute_tool"), AttrTool.String(e.Tool),
		AttrToolType.String("function"), AttrKey.String(e.Key.String())}
	if e.CallID != "" {
		attrs = append(attrs, AttrCallID.String(e.CallID))
	}
	if e.ToolDescription != "" {
		attrs = append(attrs, AttrDescription.String(e.ToolDescription))
	}
	sctx, s := o.tracer.Start(ctx, "execute_tool "+e.Tool, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(now), trace.WithAttributes(attrs...))
	return &span{Span: s, ctx: sctx, start: now, journaled: journaled}
}

// push starts a call's span and makes it the latest open one of its key.
func (o *Observer) push(ctx context.Context, e harness.Event, journaled bool) *span {
	sp := o.start(ctx, e, journaled)
	o.mu.Lock()
	o.open[e.Key] = append(o.open[e.Key], sp)
	o.mu.Unlock()
	return sp
}

// current is the latest open span of e's key, or a new one: the first
// event of a call that does not begin with EventBeforeWriteAhead (an
// unjournaled tool) starts its span.
func (o *Observer) current(ctx context.Context, e harness.Event) *span {
	o.mu.Lock()
	stack := o.open[e.Key]
	o.mu.Unlock()
	if len(stack) > 0 {
		return stack[len(stack)-1]
	}
	return o.push(ctx, e, false)
}

// pop takes the latest open span of key off, if there is one.
func (o *Observer) pop(key uuid.UUID) *span {
	o.mu.Lock()
	defer o.mu.Unlock()
	stack := o.open[key]
	if len(stack) == 0 {
		return nil
	}
	sp := stack[len(stack)-1]
	if len(stack) == 1 {
		delete(o.open, key)
	} else {
		o.open[key] = stack[:len(stack)-1]
	}
	return sp
}

func (o *Observer) attemptStarted(ctx context.Context, e harness.Event) {
	sp := o.current(ctx, e)
	o.attempts.Add(ctx, 1, metric.WithAttributes(AttrTool.String(e.Tool)))
	_, a := o.tracer.Start(sp.ctx, "agentonce.attempt", trace.WithAttributes(
		AttrTool.String(e.Tool), AttrAttempt.String(e.Attempt), AttrAttempts.Int(e.Attempts)))
	if prev := o.swapAttempt(sp, a); prev != nil {
		prev.End() // an attempt that reported no effect (in a transaction)
	}
}

func (o *Observer) attemptEnded(ctx context.Context, e harness.Event) {
	a := o.swapAttempt(o.current(ctx, e), nil)
	if a == nil {
		return
	}
	if e.Err != nil {
		// The class, not the error text: the text may quote the
		// downstream's answer.
		a.SetAttributes(AttrClass.String(e.Class.String()), AttrErrorType.String(e.Class.String()))
		a.SetStatus(codes.Error, e.Class.String())
	}
	a.End()
}

// swapAttempt sets sp's attempt in progress and returns the one before.
// Under mu: a call matched by key alone may touch another call's span.
func (o *Observer) swapAttempt(sp *span, a trace.Span) trace.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	prev := sp.attempt
	sp.attempt = a
	return prev
}

func (o *Observer) spanEvent(ctx context.Context, e harness.Event, name string) {
	attrs := []attribute.KeyValue{AttrAttempts.Int(e.Attempts)}
	if e.Class != retryclass.Success {
		attrs = append(attrs, AttrClass.String(e.Class.String()))
	}
	if e.Delay > 0 {
		attrs = append(attrs, AttrDelay.Int64(e.Delay.Milliseconds()))
	}
	o.current(ctx, e).AddEvent(name, trace.WithAttributes(attrs...))
}

// result ends the call's span and counts the call. A caller that left a
// flight still running (InProgress from an executing flight), a collapsed
// call and a caller answered without a start of its own (a replay) get a
// span of their own, and a running flight keeps its span.
func (o *Observer) result(ctx context.Context, e harness.Event) {
	var sp *span
	leftRunning := e.Status == harness.InProgress && e.Source == harness.Executed
	// A collapsed call joined a flight that has answered already.
	if !leftRunning && e.Source != harness.Collapsed {
		sp = o.pop(e.Key)
	}
	if sp == nil {
		sp = o.start(ctx, e, false)
	}
	if !sp.journaled && e.Source == harness.Executed && !leftRunning {
		// An unjournaled tool reports no attempt events; its tries are
		// this call's own.
		o.attempts.Add(ctx, int64(e.Attempts), metric.WithAttributes(AttrTool.String(e.Tool)))
	}
	if a := o.swapAttempt(sp, nil); a != nil {
		a.End()
	}
	status, source := AttrStatus.String(e.Status.String()), AttrSource.String(e.Source.String())
	sp.SetAttributes(status, source, AttrAttempts.Int(e.Attempts))
	if e.Class != retryclass.Success {
		sp.SetAttributes(AttrClass.String(e.Class.String()))
	}
	if e.Status != harness.Succeeded {
		errType := e.Status.String()
		if e.Class != retryclass.Success {
			errType = e.Class.String()
		}
		sp.SetAttributes(AttrErrorType.String(errType))
		sp.SetStatus(codes.Error, e.Status.String())
	}
	end := time.Now()
	sp.End(trace.WithTimestamp(end))
	tool := AttrTool.String(e.Tool)
	o.calls.Add(ctx, 1, metric.WithAttributes(tool, status, source))
	if sp.journaled {
		o.duration.Record(ctx, end.Sub(sp.start).Seconds(), metric.WithAttributes(tool, status, source))
	}
}
