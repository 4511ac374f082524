//go:build race

package main

// Under -race the binary a test builds is built with -race too, so that
// it reuses the packages go test compiled: on a cold build cache that is
// a compilation of agentctl's dependencies saved.
func init() { buildFlags = append(buildFlags, "-race") }
