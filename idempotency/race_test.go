//go:build race

package idempotency_test

// Under -race the agentctl a test builds is built with -race too, so that
// it reuses the packages go test compiled: on a cold build cache that is
// a compilation of agentctl's dependencies saved.
func init() { buildFlags = append(buildFlags, "-race") }
