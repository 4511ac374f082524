// Package otel turns the events of an agentonce Harness into OpenTelemetry
// spans and metrics: an Observer to set as harness.Options.Observer.
//
//	obs, err := otel.New(nil) // the global TracerProvider and MeterProvider
//	h, err := agentonce.Open(ctx, "agent.journal", &agentonce.OpenOptions{Options: harness.Options{Observer: obs}})
//
// # Spans
//
// Each call is one span, "execute_tool <tool>", a child of the span in the
// call's context. It starts at the call's first event (EventBeforeWriteAhead
// for a journaled tool) and ends at EventResult. It follows the
// OpenTelemetry GenAI conventions for tool execution: gen_ai.operation.name
// "execute_tool", gen_ai.tool.name, gen_ai.tool.type "function",
// gen_ai.tool.call.id (the model's ToolCall.ID, when given),
// gen_ai.tool.description (the registered tool's Description, when set) and,
// on a call that did not succeed, error.type: the retry class of the
// failure, or the call's status when it has none ("rejected"). Its own
// attributes are agentonce.key, agentonce.status, agentonce.source,
// agentonce.attempts and, for an outcome other than success,
// agentonce.retry_class; its status is Error unless the call succeeded.
// Each attempt is a child span, "agentonce.attempt", from EventAfterWriteAhead
// to EventAfterEffect; a failed one has error.type, its retry class. Retries, waits for an intent in flight elsewhere,
// settle waits, reconcile questions, takeovers and the recorded outcome are
// span events. A call answered without running anything of its own (a
// replay, a call that joined an identical one, a caller that stopped
// waiting) is a span of its own that starts and ends at its answer.
//
// Inputs, outputs and error texts are never recorded: a tool's input or
// output is the customer's data, and an error text may quote the
// downstream's answer. The key is the handle to look a call up in the
// journal (agentctl).
//
// # Metrics
//
//   - agentonce.calls: calls answered, by gen_ai.tool.name, agentonce.status
//     and agentonce.source.
//   - agentonce.attempts: attempts this process started, by tool.
//   - agentonce.retries: attempts retried, by tool and retry class.
//   - agentonce.call.duration (seconds): from EventBeforeWriteAhead to the
//     answer, for journaled calls that ran their own flight.
//
// # Caveats
//
//   - Spans are matched to calls by key, not by call id (a caller may give
//     none, and a flight shared by collapsed calls reports its first
//     caller's): the latest open span of a key takes the key's events. Two flights of one
//     key at once in one process (the same key with two different inputs,
//     or two Harnesses sharing the Observer), or a caller that joined a
//     flight of a replayed or failed intent answered just as a new flight
//     of the key begins, can have their spans mixed; the counts stay
//     right.
//   - A call that never reaches EventResult (runtime.Goexit in a tool, a
//     crash) leaves its span open, and held in memory, for good.
package otel
