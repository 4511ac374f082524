// Package pgtest gives tests a PostgreSQL server of their own to write in:
// the server named by AGENTONCE_PG_URL, and a schema per test that is
// dropped when the test ends; and, for failover tests, a primary and a
// standby of the test's own (StartPair), started from the server binaries.
//
// Without the variable the tests that need a server skip, naming it; with
// it set and the server unreachable they fail. .ci/run starts a server and
// sets it. Without the binaries StartPair skips, unless
// AGENTONCE_REQUIRE_PG_STANDBY (which .ci/run sets) makes that a failure.
package pgtest
