package main

import (
	"context"
	"fmt"
	"github.com/spf13/pflag"

	"github.com/agentonce/agentonce/journal"
)

var gcCommand = &command{
	name:    "gc",
	args:    "[--dry-run] [flags]",
	summary: "remove records past their TTL",
	long: `Removes the records whose TTL has passed (pending records only once their
lease has expired too). A call for an intent whose record was removed runs
anew, as a new intent. --dry-run opens the journal read-only and only counts.

bbolt does not shrink its file when records are removed; run agentctl
compact afterwards to give the space back.`,
	main: withRun(gcCmd, runGC),
}

type gcOptions struct {
	journal journalFlags
	dryRun  bool
	json    bool
}

func gcCmd(e *env, fs *pflag.FlagSet, run runFunc[gcOptions]) func(context.Context, []string) error {
	var o gcOptions
	o.journal.register(fs)
	fs.BoolVar(&o.dryRun, "dry-run", false, "count what would be removed; change nothing")
	fs.BoolVar(&o.json, "json", false, `print {"dry_run": BOOL, "removed": N}`)
	return func(ctx context.Context, pos []string) error {
		if len(pos) > 0 {
			return usageErrorf("unexpected argument %q; gc takes only flags", pos[0])
		}
		return run(ctx, e, &o)
	}
}

func runGC(ctx context.Context, e *env, o *gcOptions) error {
	s, err := o.journal.open(ctx, e, o.dryRun)
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := s.GC(ctx, journal.GCOptions{DryRun: o.dryRun})
	if err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return err
	}
	switch {
	case o.json:
		return writeOneJSON(e, struct {
			DryRun      bool `json:"dry_run"`
			Removed     int  `json:"removed"`
			KeptUnknown int  `json:"kept_unknown"`
		}{o.dryRun, res.Removed, res.KeptUnknown})
	case !e.stdoutTTY:
		fmt.Fprintf(e.stdout, "%s\t%d\nkept_unknown\t%d\n", map[bool]string{true: "would_remove", false: "removed"}[o.dryRun], res.Removed, res.KeptUnknown)
		return nil
	case o.dryRun:
		fmt.Fprintf(e.stdout, "would remove %d expired records (run without --dry-run to remove them)\n", res.Removed)
	default:
		fmt.Fprintf(e.stdout, "removed %d expired records; agentctl compact shrinks the file\n", res.Removed)
	}
	if res.KeptUnknown > 0 {
		fmt.Fprintf(e.stdout, "kept %d unknown or pending records past their TTL: they never expire into a re-run; "+
			"agentctl ls --state unknown lists them, agentctl resolve settles them\n", res.KeptUnknown)
	}
	return nil
}
