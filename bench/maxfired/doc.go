// Command maxfired measures how many times one non-idempotent charge
// fires when the process making it is killed at every durable write and
// resumed, for each runtime agentonce adapts, plain and with agentonce.
//
//	go run ./bench/maxfired [-random 6] [-crashes 3] [-pairs] [-seed 1] [-parallel 6] [-runtime eino,mcp-go]
//
// For each runtime it runs a subprocess that charges one intent through
// a loopback payment service (not idempotent; it counts charges per
// intent): once without a crash, to number its crash points (each durable
// write of its journal and its framework's checkpoints, and the effect
// itself); then killed by SIGKILL at each point in turn and resumed the
// way that framework resumes, and at each point of that resume (-pairs);
// then three times in a row at the effect, and on seeded random schedules
// of several crashes. maxFired is the most charges one intent produced
// across them. It prints the table RELIABILITY.md holds, which also says
// how each plain framework runs at its best durability. DBOS needs AGENTONCE_PG_URL; the
// genkit worker is a module of its own (bench/maxfired/genkit), which the
// command builds with the go command, so it runs inside the repository.
//
// Exit codes: 0 when every runtime with agentonce charged at most once; 1
// when one charged more (the table says where) or a run failed; 2 for bad
// flags.
package main
