// Package otel turns the events of an agentonce Harness into OpenTelemetry
// spans and metrics: an Observer to set as harness.Options.Observer.
//
//	obs, err := otel.New(nil) // the global TracerProvider and MeterProvider
//	h, err := agentonce.Open(ctx, "agent.journal", &agentonce.OpenOptions{Options: harness.Options{Observer: obs}})
//
// Each call is one span, "execute_tool <tool>", a child of the span in the
// call's context, from the call's first event to EventResult, with the
// OpenTelemetry GenAI attributes for tool execution (gen_ai.tool.name,
// gen_ai.tool.call.id, error.type as the retry class, ...) and its own
// (agentonce.key, agentonce.status, agentonce.source, agentonce.attempts,
// agentonce.retry_class); its status is Error unless the call succeeded.
// Each attempt is a child span, "agentonce.attempt". Retries, waits,
// reconcile questions, takeovers, the outcome and an intent coming to need
// a person (needs_person) are span events. A call answered without running
// anything of its own is a span of its own, and so is an operator's
// resolve through the agent's socket, "agentonce.resolved".
//
// Inputs, outputs and error texts are never recorded: they are the
// customer's data or quote the downstream. The key is the handle to look a
// call up in the journal.
//
// Metrics: agentonce.calls (by tool, status and source),
// agentonce.attempts, agentonce.retries (by tool and retry class),
// agentonce.call.duration in seconds for journaled calls that ran their
// own flight, and agentonce.needs_person and agentonce.resolved, the
// intents that came to need a person and those resolved (by tool).
//
// docs/adapters.md ("adapters/otel") is the long form, each attribute
// with its value.
//
// # Caveats
//
//   - Spans are matched to calls by key, not call id: two flights of one
//     key at once in one process (two inputs, or two Harnesses sharing the
//     Observer) can have their spans mixed; the counts stay right.
//   - A call that never reaches EventResult (runtime.Goexit in a tool, a
//     crash) leaves its span open, and held in memory, for good.
package otel
