// Command peer measures one durable step on PostgreSQL six ways against one
// server: agentonce's journal (a new intent: Begin, as for a Keyed tool, then
// Complete); DBOS Transact Go as agents run it (dbos-session: a session as
// one workflow, each tool call a step inside it, RunAsStep, ten to a
// session) and a workflow of one step per tool call (dbos); the floor, the
// fewest writes and indexes the guarantee's rules need, by hand in pgx (a
// write-ahead INSERT of the record with its key, a fenced UPDATE of its
// outcome, only the indexes a rule reads); and the two raw pgx floors a step
// could not go below (an INSERT and an UPDATE, each committed
// synchronously; and the INSERT committed asynchronously, as a Keyed
// tool's write-ahead is, then the UPDATE synchronously).
//
// Each repetition runs every system once, in a rotating order, sequentially
// and then with 16 workers, so that the load of a shared machine falls on
// all of them alike; ratios are read inside each repetition and the table
// gives their median and range. Sequentially it also times each step: a
// session's own writes (its workflow's start and end) fall in its first
// and last steps' times. Beside the time, each segment reads from
// the server's statistics how much WAL it wrote (pg_current_wal_lsn), how
// many WAL records and full-page images (pg_stat_wal) and how many commits
// (pg_stat_database.xact_commit), per step. The WAL figures are the whole
// server's: run it on a server no one else writes to, or read the minimum
// column, which other writers can only raise. With -servercpu, when the
// server runs on the same host, it also reads the CPU time the system's
// own backends spent in each segment (/proc/<pid>/schedstat), a figure
// other programs' load changes far less than the time per step.
//
// Before its segments each system warms up, -warmup steps per worker (8),
// so that every connection is past the server's first plans of its
// prepared statements (five custom plans, then a generic one), as in a
// long-running process's pool.
//
//	AGENTONCE_PG_URL='postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable' \
//	  go run ./bench/peer -reps 5 -steps 2000
//
// Every system writes in a schema of its own, named with a random suffix
// and dropped at the end, in the database -database names (created when
// missing), so that the commit counts are the benchmark's own. The module
// is separate from agentonce's so that DBOS is no dependency of the SDK.
package main
