package main

import (
	"context"
	"fmt"
	"github.com/spf13/pflag"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/journal/postgres"
)

var verifyCommand = &command{
	name:    "verify",
	args:    "[flags]",
	summary: "check every record's checksum; list the damaged records",
	long: `Reads every record of the journal, read-only, checks its checksum and
decodes it, and lists each damaged record: its key and what is wrong. Then
a count. Exit code 5 when any record is damaged, 0 when none is.

A bbolt journal is read straight from its records, without the index an
open builds, so a journal whose damage stops an agent opening it can still
be checked (no agent may have it open: bbolt's lock). A record written
before checksums existed is decoded but cannot be checked; the next write
of it seals it.

Without a terminal, each damaged record is a line KEY<TAB>PROBLEM and the
last line is "# N records, M damaged".`,
	main: withRun(verifyCmd, runVerify),
}

type verifyOptions struct {
	journal journalFlags
	json    bool
}

func verifyCmd(e *env, fs *pflag.FlagSet, run runFunc[verifyOptions]) func(context.Context, []string) error {
	var o verifyOptions
	o.journal.register(fs)
	fs.BoolVar(&o.json, "json", false, "print the report as one JSON object (see 'agentctl help json')")
	return func(ctx context.Context, pos []string) error {
		if len(pos) > 0 {
			return usageErrorf("unexpected argument %q; verify takes only flags", pos[0])
		}
		return run(ctx, e, &o)
	}
}

// verifier is a store that can scan its records for damage (the
// PostgreSQL store; a bbolt file is verified without opening a store).
type verifier interface {
	Verify(ctx context.Context, damaged func(key uuid.UUID, err error)) (int, error)
}

type verifyJSON struct {
	Journal string        `json:"journal"`
	Records int           `json:"records"`
	Damaged []damagedJSON `json:"damaged"`
}

type damagedJSON struct {
	Key     string `json:"key"`
	Problem string `json:"problem"`
}

func runVerify(ctx context.Context, e *env, o *verifyOptions) error {
	if err := o.journal.resolve(e); err != nil {
		return err
	}
	out := verifyJSON{Journal: o.journal.location, Damaged: []damagedJSON{}}
	collect := func(key uuid.UUID, err error) {
		out.Damaged = append(out.Damaged, damagedJSON{Key: key.String(), Problem: err.Error()})
	}
	var err error
	if postgres.IsURL(o.journal.location) {
		out.Records, err = verifyPostgres(ctx, e, o, collect)
	} else {
		if err := checkBoltFile(o.journal.location); err != nil {
			return err
		}
		out.Records, err = bolt.Verify(ctx, o.journal.location, &bolt.Options{LockTimeout: o.journal.lockTimeout}, collect)
	}
	if err != nil {
		return err
	}
	if err := writeVerify(e, o, &out); err != nil {
		return err
	}
	if n := len(out.Damaged); n > 0 {
		return &cliError{code: exitCorrupt, quiet: true, err: fmt.Errorf("%d of %d records damaged", n, out.Records)}
	}
	return nil
}

func verifyPostgres(ctx context.Context, e *env, o *verifyOptions, damaged func(uuid.UUID, error)) (int, error) {
	s, err := o.journal.open(ctx, e, true)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	v, ok := s.(verifier)
	if !ok {
		return 0, fmt.Errorf("journal %s: this store cannot be verified", o.journal.location)
	}
	return v.Verify(ctx, damaged)
}

func writeVerify(e *env, o *verifyOptions, out *verifyJSON) error {
	if o.json {
		jw := newJSONWriter(e.stdout)
		if err := jw.write(out); err != nil {
			return err
		}
		return jw.flush()
	}
	n := len(out.Damaged)
	if !e.stdoutTTY {
		rw := newRowWriter(e.stdout, false)
		for _, d := range out.Damaged {
			rw.row(d.Key, d.Problem)
		}
		if err := rw.flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(e.stdout, "# %d records, %d damaged\n", out.Records, n)
		return err
	}
	if n == 0 {
		_, err := fmt.Fprintf(e.stdout, "All %d records of %s are intact.\n", out.Records, out.Journal)
		return err
	}
	rw := newRowWriter(e.stdout, true)
	rw.row("KEY", "PROBLEM")
	for _, d := range out.Damaged {
		rw.row(d.Key, d.Problem)
	}
	if err := rw.flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(e.stdout, "\n%d of %d records of %s are damaged; agents and agentctl refuse to read them.\n"+
		"Restore the journal from a backup.\n", n, out.Records, out.Journal)
	return err
}
