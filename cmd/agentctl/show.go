package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"github.com/spf13/pflag"
	"strconv"
	"unicode/utf8"

	"github.com/agentonce/agentonce/journal"
)

var showCommand = &command{
	name:    "show",
	args:    "KEY [flags]",
	summary: "show one intent: fields, input, output, attempts, lease",
	long: `Shows everything the journal holds for one intent: its intent fields,
effect kind, state, fingerprint, canonical input (when stored), output or
error, every attempt with its id, times and retry class, the lease, an
operator's resolution, and for an intent that had to be approved the
approvals needed and given (who, when, why, for which input), its
deadline and a rejection (resolved_as suppressed, by whom and why).`,
	main: withRun(showCmd, runShow),
}

type showOptions struct {
	journal journalFlags
	key     keyArg
	json    bool
}

func showCmd(e *env, fs *pflag.FlagSet, run runFunc[showOptions]) func(context.Context, []string) error {
	var o showOptions
	o.journal.register(fs)
	fs.BoolVar(&o.json, "json", false, "print the record as JSON (see 'agentctl help json')")
	return func(ctx context.Context, pos []string) error {
		var err error
		if len(pos) != 1 {
			return usageErrorf("want exactly one KEY, got %d arguments; agentctl ls lists keys", len(pos))
		}
		if o.key, err = parseKeyArg(pos[0]); err != nil {
			return err
		}
		return run(ctx, e, &o)
	}
}

func runShow(ctx context.Context, e *env, o *showOptions) error {
	s, err := o.journal.open(ctx, e, true)
	if err != nil {
		return err
	}
	defer s.Close()
	r, err := o.key.record(ctx, s)
	if err != nil {
		return err
	}
	if o.json {
		jw := newJSONWriter(e.stdout)
		if err := jw.write(&r); err != nil {
			return err
		}
		return jw.flush()
	}
	return writeRecord(e, &r, !liveWriters(o.journal.location, s))
}

// writeRecord prints one record as "field value" rows and an attempts table
// (aligned on a terminal, tab-separated otherwise). singleWriter is as for
// previewRecord.
func writeRecord(e *env, r *journal.Record, singleWriter bool) error {
	tm := machineTime
	if e.stdoutTTY {
		tm = e.humanTime
	}
	rw := newRowWriter(e.stdout, e.stdoutTTY)
	rw.dash = e.stdoutTTY
	rw.row("key", r.Key.String())
	rw.row("tenant", r.Intent.Tenant)
	rw.row("session", r.Intent.Session)
	rw.row("turn", r.Intent.Turn)
	rw.row("tool", r.Intent.Tool)
	rw.row("discriminator", r.Intent.Discriminator)
	rw.row("effect", r.Effect.String())
	rw.row("state", r.State.String())
	fp := ""
	if !r.Fingerprint.IsZero() {
		fp = r.Fingerprint.String()
	}
	rw.row("fingerprint", fp)
	rw.row("created", tm(r.Created))
	rw.row("updated", tm(r.Updated))
	rw.row("expires", tm(r.Expires)+expiredNote(e, r))
	rw.row("input", bytesText(r.Input, "(not stored: fingerprint only)"))
	rw.row("output", bytesText(r.Output, ""))
	rw.row("error_class", r.ErrorClass)
	rw.row("error_message", r.ErrorMessage)
	rw.row("lease_owner", r.Lease.Owner)
	rw.row("lease_token", strconv.FormatUint(r.Lease.Token, 10))
	rw.row("lease_expires", tm(r.Lease.Expires)+leaseNote(e, r, singleWriter))
	if a := r.Approval; a != nil {
		rw.row("approvals", fmt.Sprintf("%d of %d", len(a.Given), a.Need))
		rw.row("approval_deadline", tm(a.Deadline)+deadlineNote(e, r))
		for _, g := range a.Given {
			rw.row("approved_by", g.By+" at "+tm(g.At)+" for input "+g.Fingerprint.String()+": "+orDash(g.Reason))
		}
	}
	if res := r.Resolution; res != nil {
		rw.row("resolved_as", res.State.String())
		rw.row("resolved_by", res.By)
		rw.row("resolved_at", tm(res.At))
		rw.row("resolved_reason", res.Reason)
		rw.row("resolved_output", bytesText(res.Output, ""))
	}
	rw.row("version", strconv.Itoa(r.Version))
	if err := rw.flush(); err != nil {
		return err
	}
	if e.stdoutTTY {
		fmt.Fprintln(e.stdout)
	}
	rw = newRowWriter(e.stdout, e.stdoutTTY)
	rw.dash = e.stdoutTTY
	if e.stdoutTTY {
		rw.row("ATTEMPT", "ID", "START", "END", "CLASS", "ERROR")
	}
	for i, a := range r.Attempts {
		n := strconv.Itoa(i + 1)
		if e.stdoutTTY {
			rw.row(n, a.ID, tm(a.Start), tm(a.End), a.Class, a.Error)
		} else {
			rw.row("attempt", n, a.ID, tm(a.Start), tm(a.End), a.Class, a.Error)
		}
	}
	return rw.flush()
}

func expiredNote(e *env, r *journal.Record) string {
	if !r.Expires.IsZero() && !e.now().Before(r.Expires) {
		return " (expired: gc removes it; a new call runs anew)"
	}
	return ""
}

func deadlineNote(e *env, r *journal.Record) string {
	switch {
	case r.State != journal.StateAwaiting:
		return ""
	case !e.now().Before(r.Approval.Deadline):
		return " (passed: it never runs; its call must ask again)"
	case len(r.Approval.Given) >= r.Approval.Need:
		return " (approved: it runs the next time its call is made)"
	}
	return fmt.Sprintf(" (agentctl approve KEY --fingerprint %s, or reject)", r.Fingerprint)
}

func leaseNote(e *env, r *journal.Record, singleWriter bool) string {
	switch {
	case r.State != journal.StatePending || r.Lease.Expires.IsZero():
		return ""
	case !e.now().Before(r.Lease.Expires):
		return " (expired: the owner stopped)"
	case singleWriter:
		return " (the owner stopped: no process has the journal open; the next open for writing ends the lease)"
	}
	return " (live)"
}

// bytesText shows stored bytes as text when they are UTF-8, else base64.
func bytesText(b []byte, none string) string {
	switch {
	case b == nil:
		return none
	case utf8.Valid(b):
		return string(b)
	default:
		return "base64:" + base64.StdEncoding.EncodeToString(b)
	}
}
