// Command payment-server is both ends of the wire on agentonce: a payments
// API whose POST /v1/charges is protected by the idempotency middleware on
// a journal (bbolt or PostgreSQL), and an agent whose Keyed charge tool
// calls it through downstream.Transport while the network drops answers. It
// ends with the charges counted: as many as the agent asked for, none
// twice.
//
//	go run ./examples/payment-server                 # the demo: server and agent
//	go run ./examples/payment-server serve -addr 127.0.0.1:4242 -journal server.journal
//
// Exit status: 0 done; 1 error; 2 bad flags; 4 done, but a charge was
// duplicated (a bug).
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	args := os.Args[1:]
	var err error
	dups := 0
	if len(args) > 0 && args[0] == "serve" {
		err = serveMain(ctx, args[1:])
	} else {
		dups, err = demoMain(ctx, args, os.Stdout)
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.As(err, new(flagError)):
		fmt.Fprintln(os.Stderr, "payment-server:", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "payment-server:", err)
		os.Exit(1)
	case dups != 0:
		os.Exit(4)
	}
}

// flagError is a bad command line.
type flagError struct{ error }
