// How agentctl's source is laid out: this file is a few lines; root.go
// builds the spf13/cobra tree, suggests the closest command or flag, and
// renders help; completion.go completes commands, flags, sessions and keys
// for bash, zsh and fish. Each command is one file with an options struct,
// a setup function that registers its flags (bound to the options) and
// returns what checks the arguments and calls the plain run function it is
// given (withRun binds the two; a test passes a recording one, so parsing
// is tested without a journal, gh's runF). keys.go reads a KEY or a key
// prefix; journal.go is the only place that opens a journal.
//
// agentctl is a module of its own (cmd/agentctl/go.mod), so that cobra is
// not a dependency of the agentonce module; `go run ./cmd/agentctl` works
// from the repository root through go.work.

package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, osEnv(), os.Args[1:])
	stop()
	os.Exit(code)
}
