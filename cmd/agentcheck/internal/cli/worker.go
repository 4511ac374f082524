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

// runServer is "agentcheck server": the middleware downstream in a process
// of its own (-kill-server), started and killed by the check itself.
func runServer(args []string, stderr io.Writer) int {
	var o check.ServerProcOptions
	fs := flag.NewFlagSet("agentcheck server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Plan, "plan", "", "plan file")
	fs.StringVar(&o.Journal, "journal", "", "the middleware's journal location")
	fs.StringVar(&o.Log, "log", "", "the downstream's history file")
	fs.StringVar(&o.ErrLog, "errlog", "", "the middleware's error log")
	fs.StringVar(&o.Addr, "addr", "", "loopback address to listen on")
	fs.StringVar(&o.Server.Owner, "owner", "", "lease owner")
	fs.DurationVar(&o.Server.LeaseTTL, "lease", 0, "the middleware's lease (default its own, 30s)")
	fs.BoolVar(&o.Server.HandlerFailAfter, "handler-5xx", false, "a fail-after step is the handler's")
	fs.BoolVar(&o.Server.StoreServerErrors, "store-5xx", false, "store 5xx answers")
	fs.BoolVar(&o.Server.Reconcile, "reconcile", false, "the middleware asks the downstream's record of effects about a dead server's requests")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if o.Plan == "" || o.Journal == "" || o.Log == "" || o.ErrLog == "" || o.Addr == "" {
		fmt.Fprintln(stderr, "agentcheck server: -plan, -journal, -log, -errlog and -addr are required (the check starts servers itself)")
		return exitUsage
	}
	if err := check.RunServer(context.Background(), o); err != nil {
		fmt.Fprintf(stderr, "agentcheck server: %v\n", err)
		return exitCannotRun
	}
	return exitOK
}
