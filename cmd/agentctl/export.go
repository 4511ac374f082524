package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/agentonce/agentonce/journal"
)

var exportCommand = &command{
	name:    "export",
	args:    "[--output FILE] [flags]",
	summary: "write every record as JSON Lines (backup, audit, moving stores)",
	long: `Writes the journal as JSON Lines: a header line naming the format and the
key the lines are sealed with, then one record per line, newest first, in
the schema of 'agentctl help json', each sealed by a last member "seal": an
HMAC-SHA-256 of the record under a key derived from the journal's
namespace. Only a holder of the namespace can make a line that import
accepts, so an edited output cannot be slipped into a journal and replayed
as a tool's answer. The namespace itself is not in the export: import takes
it from the journal it writes to, or from AGENTONCE_NAMESPACE with --create.
Export, import into a new journal and export again gives identical lines.

The export holds the tools' inputs and outputs: keep it like the journal
itself. --output writes the file with mode 0600, through a temporary file,
so a failed export leaves no partial file.`,
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
		warnExport(e, "standard output")
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
	warnExport(e, o.output)
	return nil
}

// warnExport says, on standard error, that an export written to dest
// holds the tools' inputs and outputs, which export must not hand out
// without a word.
func warnExport(e *env, dest string) {
	fmt.Fprintf(e.stderr, "agentctl export: warning: %s holds the tools' inputs and outputs: keep it like the journal itself "+
		"(it does not hold the namespace: import --create takes it from AGENTONCE_NAMESPACE)\n", dest)
}

// exportTo writes the header and every record of s to w.
func exportTo(ctx context.Context, s journal.Store, w io.Writer) (int, error) {
	k := exportSealKey(s.Namespace())
	jw := newJSONWriter(w)
	if err := jw.write(exportHeader{Export: exportFormat, Seal: sealName, KeyID: k.id()}); err != nil {
		return 0, err
	}
	n := 0
	for r, err := range s.List(ctx, journal.Filter{}) {
		if err != nil {
			return n, err
		}
		line, err := sealedLine(k, &r)
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
