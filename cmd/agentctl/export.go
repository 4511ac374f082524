package main

import (
	"context"
	"fmt"
	"github.com/spf13/pflag"
	"io"
	"os"
	"path/filepath"

	"github.com/agentonce/agentonce/journal"
)

var exportCommand = &command{
	name:    "export",
	args:    "[--output FILE] [flags]",
	summary: "write every record as JSON Lines (backup, audit, moving stores)",
	long: `Writes the journal as JSON Lines: a header line with the journal's namespace,
then one record per line, newest first, in the schema of 'agentctl help
json', each sealed by a last member "checksum": the SHA-256 of the line's
bytes before it, so that import refuses a changed or damaged line. agentctl import reads it back into any store; export, import into a
new journal and export again gives identical lines.

The export holds the namespace secret and the tools' inputs and outputs:
keep it like the journal itself. --output writes the file with mode 0600,
through a temporary file, so a failed export leaves no partial file.`,
	main: withRun(exportCmd, runExport),
}

type exportOptions struct {
	journal journalFlags
	output  string
}

func exportCmd(e *env, fs *pflag.FlagSet, run runFunc[exportOptions]) func(context.Context, []string) error {
	var o exportOptions
	o.journal.register(fs)
	fs.StringVar(&o.output, "output", "", "write to `FILE` instead of standard output")
	return func(ctx context.Context, pos []string) error {
		if len(pos) > 0 {
			return usageErrorf("unexpected argument %q; export writes to standard output or --output FILE", pos[0])
		}
		return run(ctx, e, &o)
	}
}

func runExport(ctx context.Context, e *env, o *exportOptions) error {
	s, err := o.journal.open(ctx, e, true)
	if err != nil {
		return err
	}
	defer s.Close()
	if o.output == "" {
		if _, err := exportTo(ctx, s, e.stdout); err != nil {
			return err
		}
		warnNamespace(e, "standard output")
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(o.output), ".agentctl-export-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	n, err := exportTo(ctx, s, tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("export to %s: %w", o.output, err)
	}
	if err := os.Rename(tmp.Name(), o.output); err != nil {
		return err
	}
	if e.stderrTTY {
		fmt.Fprintf(e.stderr, "exported %d records to %s\n", n, o.output)
	}
	warnNamespace(e, o.output)
	return nil
}

// warnNamespace says, on standard error, that an export written to dest
// carries the namespace: derive hides it unless asked (--show-namespace),
// and export must not hand it out without a word.
func warnNamespace(e *env, dest string) {
	fmt.Fprintf(e.stderr, "agentctl export: warning: %s holds the journal's namespace, a secret that lets anyone "+
		"predict this deployment's keys, and the tools' inputs and outputs: keep it like the journal itself\n", dest)
}

// exportTo writes the header and every record of s to w.
func exportTo(ctx context.Context, s journal.Store, w io.Writer) (int, error) {
	jw := newJSONWriter(w)
	if err := jw.write(exportHeader{Export: exportFormat, Namespace: s.Namespace().String(), Checksum: sealName}); err != nil {
		return 0, err
	}
	n := 0
	for r, err := range s.List(ctx, journal.Filter{}) {
		if err != nil {
			return n, err
		}
		line, err := sealedLine(&r)
		if err != nil {
			return n, err
		}
		if _, err := jw.bw.Write(line); err != nil {
			return n, err
		}
		n++
	}
	return n, jw.flush()
}
