// Package pgtest gives tests a PostgreSQL server of their own to write in:
// the server named by AGENTONCE_PG_URL, and a schema per test that is
// dropped when the test ends.
//
// Without the variable the tests that need a server skip, naming it; with
// it set and the server unreachable they fail. .ci/run starts a server and
// sets it.
package pgtest
