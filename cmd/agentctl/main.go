// How agentctl's source is laid out: this file is a few lines; root.go
// dispatches and renders help; each command is one file with an options
// struct, a main function that parses flags into it, and a plain run
// function that main is given (withRun binds the two; a test passes a
// recording one, so parsing is tested without a journal). Flags use the
// standard flag package, one FlagSet per command; parseFlags lets flags
// follow positional arguments. journal.go is the only place that opens a
// journal.

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
