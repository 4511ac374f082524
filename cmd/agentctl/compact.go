package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/spf13/pflag"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/agentonce/agentonce/journal/bolt"
)

var compactCommand = &command{
	name:    "compact",
	args:    "[--output FILE] [flags]",
	summary: "shrink the journal file by rewriting it",
	long: `bbolt never gives freed pages back to the file system: after gc the file
keeps its size. compact copies the live records into a new file and, unless
--output is given, replaces the journal with it (the old file is replaced
only when the copy is complete and synced, and only if the journal was not
modified meanwhile).

Stop every agent that uses the journal first. compact refuses a journal
that another process holds open, but a process that opens it between the
copy and the replacement would write into the replaced file.

On a terminal, a progress bar is drawn on standard error for journals of
16 MiB and more.`,
	main: withRun(compactCmd, runCompact),
}

type compactOptions struct {
	journal journalFlags
	output  string
}

// progressMinBytes is the journal size from which compact draws a bar (a
// variable for tests).
var progressMinBytes int64 = 16 << 20

func compactCmd(e *env, fs *pflag.FlagSet, run runFunc[compactOptions]) func(context.Context, []string) error {
	var o compactOptions
	o.journal.register(fs)
	fs.StringVar(&o.output, "output", "", "write the compacted journal to `FILE` (which must not exist) and leave the journal as it is")
	return func(ctx context.Context, pos []string) error {
		if len(pos) > 0 {
			return usageErrorf("unexpected argument %q; compact takes only flags", pos[0])
		}
		return run(ctx, e, &o)
	}
}

func runCompact(ctx context.Context, e *env, o *compactOptions) error {
	if err := o.journal.resolve(e); err != nil {
		return err
	}
	src := o.journal.location
	if isRemote(src) {
		return usageErrorf("compact applies to bbolt journal files; PostgreSQL reclaims space with VACUUM, Redis by itself")
	}
	before, err := os.Stat(src)
	if errors.Is(err, fs.ErrNotExist) {
		_, err = openJournal(ctx, src, true) // the one "not found" message
		return err
	}
	if err != nil {
		return err
	}
	dst := o.output
	inPlace := dst == ""
	if inPlace {
		dst = src + ".compact"
	}
	if _, err := os.Stat(dst); err == nil {
		hint := "remove it or choose another --output"
		if inPlace {
			hint = "it is left from an interrupted compact: remove it and run compact again"
		}
		return &cliError{code: exitUsage, err: fmt.Errorf("%s already exists", dst), hint: hint}
	}

	var bar *progressBar
	var progress func(done, total int64)
	if e.stderrTTY && before.Size() >= progressMinBytes {
		bar = &progressBar{w: e.stderr, now: e.now, label: "compacting"}
		progress = bar.update
	}
	err = bolt.Compact(ctx, src, dst, progress)
	bar.finish()
	if err != nil {
		os.Remove(dst)
		return err
	}
	after, err := os.Stat(dst)
	if err != nil {
		return err
	}
	if inPlace {
		// The copy was made under the journal's lock; refuse to replace a
		// journal that someone wrote to since it was released.
		now, err := os.Stat(src)
		if err != nil {
			os.Remove(dst)
			return err
		}
		if now.Size() != before.Size() || !now.ModTime().Equal(before.ModTime()) {
			os.Remove(dst)
			return &cliError{code: exitInUse, err: fmt.Errorf("journal %s changed while it was compacted", src),
				hint: "stop the agents using it and run compact again"}
		}
		if err := os.Rename(dst, src); err != nil {
			os.Remove(dst)
			return err
		}
		dst = src
	}
	fmt.Fprintf(e.stdout, "compacted %s: %s -> %s (%s)\n", src, humanBytes(before.Size()), humanBytes(after.Size()), dstNote(inPlace, dst))
	return nil
}

func dstNote(inPlace bool, dst string) string {
	if inPlace {
		return "replaced in place"
	}
	return "written to " + dst
}

// progressBar draws "label  42% [########            ]" on a terminal,
// redrawing at most ten times a second. A nil *progressBar does nothing.
type progressBar struct {
	w     io.Writer
	now   func() time.Time
	label string
	last  time.Time
	drawn bool
}

func (p *progressBar) update(done, total int64) {
	if p == nil || total <= 0 {
		return
	}
	t := p.now()
	if done < total && t.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = t
	const width = 30
	frac := float64(done) / float64(total)
	frac = min(max(frac, 0), 1)
	n := int(frac * width)
	fmt.Fprintf(p.w, "\r%s %3.0f%% [%s%s]", p.label, frac*100, strings.Repeat("#", n), strings.Repeat(" ", width-n))
	p.drawn = true
}

func (p *progressBar) finish() {
	if p != nil && p.drawn {
		fmt.Fprintln(p.w)
	}
}
