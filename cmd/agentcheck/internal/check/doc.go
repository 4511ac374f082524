// Package check is the library of agentcheck, a seeded fault checker for
// agentonce: it generates a schedule of intents and faults from a seed,
// runs it against real agent processes, a real journal (bbolt or
// PostgreSQL) and a loopback downstream that counts effects, records every
// call, answer, attempt and effect in a history, and decides per intent
// whether each answer the agent got was true to that history.
//
// The pieces, in the order a run uses them:
//
//   - Generate makes a Plan from a seed: tools of every effect kind and
//     intents, each with a scenario, a downstream script and the calls
//     that issue it.
//   - Downstream is the loopback service the tools call; it follows each
//     intent's script, honours Idempotency-Key by the key alone (as a real
//     server does), keeps acting after a client hangs up, and records
//     requests, effects and responses. NewMiddlewareDownstream hands its
//     Idempotency-Key bookkeeping to package idempotency on a real
//     journal, and applies the script's faults to the middleware's
//     answers (ModeMiddleware).
//   - RunWorker is the body of one agent process (agentcheck worker): it
//     drives the plan's calls through the public harness API and records
//     calls and answers. It is the only file that uses harness types.
//   - Run starts the downstream and the worker processes, kills them with
//     SIGKILL and restarts them, terminates PostgreSQL backends, makes
//     the approver's decisions (approver.go: through the worker's socket
//     on bbolt, the journal on PostgreSQL, as agentctl does), then runs a
//     final pass that re-issues every intent, merges the histories and
//     calls Check.
//   - Check applies the rules (see Rules) to a history and returns a
//     Report; an effect later than its tool declared (RuleSettleBroken)
//     is reported apart, as the downstream's fault, not the harness's.
//
// # Caveats
//
// Times in a history are wall-clock times of one host: the checker relies
// on every process reading the same clock. The skew a worker is given
// applies to its journal's clock only, never to the history.
//
// A run is determined by its seed only in what it schedules; the
// interleavings the operating system chooses differ between runs, so a
// seed that shows a violation shows it often, not always.
package check
