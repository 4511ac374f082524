package cli

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/agentonce/agentonce/cmd/agentcheck/internal/check"
)

// runWorker is "agentcheck worker": one agent process of a check, started
// by the check itself.
func runWorker(args []string, stderr io.Writer) int {
	var o check.WorkerOptions
	fs := flag.NewFlagSet("agentcheck worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Plan, "plan", "", "plan file")
	fs.StringVar(&o.Journal, "journal", "", "journal location: bbolt file or postgres:// URL")
	fs.StringVar(&o.History, "history", "", "this process's history file")
	fs.StringVar(&o.Proc, "proc", "", "process name, also the lease owner")
	fs.IntVar(&o.Slot, "slot", 0, "worker slot")
	fs.BoolVar(&o.Final, "final", false, "final pass: re-issue every intent once")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if o.Plan == "" || o.Journal == "" || o.History == "" || o.Proc == "" {
		fmt.Fprintln(stderr, "agentcheck worker: -plan, -journal, -history and -proc are required (the check starts workers itself)")
		return exitUsage
	}
	if err := check.RunWorker(context.Background(), o); err != nil {
		fmt.Fprintf(stderr, "agentcheck worker %s: %v\n", o.Proc, err)
		return exitCannotRun
	}
	return exitOK
}
