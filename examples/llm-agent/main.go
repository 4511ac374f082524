// Command llm-agent is a runnable agent loop (model → tool calls → harness
// → results → model) against a flaky payment API, offline: a scripted
// model, injected faults, a bbolt journal. It shows zero duplicate side
// effects, across retries, duplicates and crashes.
//
//	go run ./examples/llm-agent              # run (again: answered from the journal)
//	go run ./examples/llm-agent -reset       # start over
//	go run ./examples/llm-agent -crash-at after-effect; go run ./examples/llm-agent
//
// Exit status: 0 done; 1 error; 2 bad flags; 3 crashed on purpose
// (-crash-at); 4 done, but a side effect was duplicated (a bug).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	opts, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "llm-agent:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sum, err := run(ctx, opts, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "llm-agent:", err)
		os.Exit(1)
	}
	if sum.DuplicateSideEffects != 0 {
		os.Exit(4)
	}
}
