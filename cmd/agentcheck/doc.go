// Command agentcheck is a seeded fault checker for agentonce, in the manner
// of Jepsen: from a seed it generates a schedule of intents and faults,
// runs it against real agent processes (itself, re-executed as
// "agentcheck worker"), a real journal and a loopback downstream that
// counts effects, and checks every answer the agents got against the
// history of what happened.
//
// Usage:
//
//	agentcheck [-seed N] [-duration 20s] [-store bolt|postgres|redis|both] [-pg URL]
//	           [-workers 3] [-intents 0] [-lease 500ms] [-skew=true] [-kill=true]
//	           [-scenarios LIST] [-history FILE] [-json] [-v]
//	           [-downstream builtin|middleware] [-server-store bolt|postgres|redis]
//	           [-redis URL] [-handler-5xx] [-store-5xx] [-kill-server] [-reconcile]
//	           [-failover CMD]
//
// On bbolt one agent process runs at a time and is killed and restarted; on
// PostgreSQL several run at once, are killed and restarted, have their
// database backends terminated, and one runs with its journal clock 90
// seconds ahead. -store redis puts the agents' journal on the Redis server
// or cluster -redis names (redis://host:port/db, or
// redis+cluster://host:port/?addr=host2:port2&replicas=1), in a key
// prefix of its own removed after the run; it needs cmd/agentcheck/redis.
// -skew=false turns the skew off, -kill=false the kills and
// terminations, and -scenarios runs only the named scenarios. -failover
// runs a shell command once, halfway, that must kill the PostgreSQL
// primary and promote a standby that -pg names too, or kill a master of
// the Redis cluster, whose replica the cluster promotes. After
// -duration a final process re-issues every intent once. The seed (random
// unless given) is printed first; the same seed gives the same schedule.
//
// -downstream middleware puts package idempotency, on a journal of
// -server-store of its own, between the downstream's fault script and the
// handler that makes the effect, so that harness and middleware are judged
// together; the script's faults are applied to the middleware's answers.
// -kill-server runs that server in a process of its own and kills it with
// SIGKILL every few seconds.
// -reconcile gives the middleware Options.Reconcile, answered from the
// downstream's own record of effects by key, and counts the server's
// unknowns it settled without a person.
// -store redis and -server-store redis need cmd/agentcheck/redis, this
// command with the Redis journal linked in.
//
// The approval scenario calls tools that need approval; an approver in the
// checker's process approves (one or two distinct approvers), rejects,
// forges an approval of another input or lets the deadline pass, at
// random times, through the worker's socket (bbolt) or the journal
// (PostgreSQL, Redis), as agentctl does.
//
// The output lists each violation with the seed, the rule and the
// intent's history lines (the first two per rule; -v prints all), then a
// table of violations per rule and scenario, and ends with the line
//
//	agentcheck: N intents, E effects, V violations
//
// -json prints the same as one JSON object instead. The merged history is
// written as JSON Lines to -history (default: a file named for the store
// and seed in the temporary directory).
//
// Exit codes: 0 no violation (and -help); 1 at least one violation, or a
// run whose workers failed; 2 usage, a missing PostgreSQL URL included; 3
// the check could not run (no PostgreSQL server, no temporary directory).
package main
