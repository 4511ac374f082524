package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/spf13/pflag"
	"io"
	"io/fs"
	"os"
	"sync"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/agentonce/agentonce/journal"
)

var importCommand = &command{
	name:    "import",
	args:    "[FILE | -] [--create] [flags]",
	summary: "read records from an export (JSON Lines) into a journal",
	long: `Reads an export (agentctl export) from FILE or standard input and writes its
records into the journal as they are: state, attempts and times kept.

Nothing is written until the whole input has been read and checked: the
header must be there (it names the namespace), every line must parse and
match its checksum, every record must be one the journal's state machine
could have produced (the check every store's Import makes), and every
record must either be new or identical to the one the journal already
holds (identical ones are skipped). A bad line or
a conflicting record is reported with its line number and nothing is
imported. The input is read twice (standard input is first copied to a
temporary file), so memory does not grow with the export's size.

The export's namespace must be the journal's, or keys derived later would
not match the imported records. --create creates the journal (a bbolt file,
or the PostgreSQL schema) when it does not exist, with the export's
namespace.`,
	main: withRun(importCmd, runImport),
}

type importOptions struct {
	journal journalFlags
	input   string
	create  bool
}

func importCmd(e *env, fs *pflag.FlagSet, run runFunc[importOptions]) func(context.Context, []string) error {
	var o importOptions
	o.journal.register(fs)
	fs.BoolVar(&o.create, "create", false, "create the journal if it does not exist")
	return func(ctx context.Context, pos []string) error {
		switch len(pos) {
		case 0:
			o.input = "-"
		case 1:
			o.input = pos[0]
		default:
			return usageErrorf("want at most one FILE, got %d arguments", len(pos))
		}
		return run(ctx, e, &o)
	}
}

// importWorkers write records concurrently, so that the store's group
// commit shares one sync among many of them.
const importWorkers = 32

func runImport(ctx context.Context, e *env, o *importOptions) error {
	if err := o.journal.resolve(e); err != nil {
		return err
	}
	in, name, cleanup, err := openImportInput(e, o.input)
	if err != nil {
		return err
	}
	defer cleanup()

	exists, err := journalExists(ctx, e, &o.journal)
	if err != nil {
		return err
	}
	create := o.create && !exists
	if !exists && !create {
		_, err := o.journal.open(ctx, e, true) // the one "not found" error
		return err
	}
	plan, err := checkImport(ctx, e, o, in, name, exists, create)
	if err != nil {
		return err
	}
	var s journal.Store
	if create {
		s, err = createJournal(ctx, o.journal.location, plan.ns, o.journal.lockTimeout, e.now)
	} else {
		s, err = o.journal.open(ctx, e, false)
	}
	if err != nil {
		return err
	}
	defer s.Close()
	written, err := writeImport(ctx, s, in, name, plan.present)
	if err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "imported %d records into %s (%d already present)\n", written, o.journal.location, plan.total-written)
	return nil
}

// importPlan is what the check pass learned about an export.
type importPlan struct {
	ns      uuid.UUID          // the header's namespace; zero without a header
	present map[uuid.UUID]bool // records the journal already holds, identical
	total   int                // records in the export
}

// checkImport is pass 1: it reads and checks the whole export before
// anything is written. Against an existing journal the check runs on a
// read-only open, so that a refused import leaves the file as it was, byte
// for byte.
func checkImport(ctx context.Context, e *env, o *importOptions, in io.Reader, name string, exists, create bool) (*importPlan, error) {
	var check journal.Store
	if exists {
		var err error
		if check, err = o.journal.open(ctx, e, true); err != nil {
			return nil, err
		}
		defer check.Close()
	}
	plan := &importPlan{present: map[uuid.UUID]bool{}}
	ns, err := scanExport(in, name, func(ns uuid.UUID, line int, rec *journal.Record) error {
		plan.total++
		if check == nil {
			return nil
		}
		old, err := check.Get(ctx, rec.Key)
		switch {
		case isNotFound(err):
			return nil
		case err != nil:
			return err
		case !sameRecord(&old, rec):
			return &cliError{code: exitConflict,
				err:  fmt.Errorf("%s line %d: key %s: %w", name, line, rec.Key, journal.ErrExists),
				hint: "nothing was imported; compare with agentctl show " + rec.Key.String()}
		}
		plan.present[rec.Key] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	plan.ns = ns
	switch {
	case check != nil && ns != check.Namespace():
		return nil, &cliError{code: exitConflict,
			err:  fmt.Errorf("%s was exported from a journal with another namespace than %s", name, o.journal.location),
			hint: "its keys would not match: import into a new journal with --create"}
	}
	if check != nil {
		if err := check.Close(); err != nil {
			return nil, err
		}
	}
	return plan, nil
}

// writeImport is pass 2: it reads the export again and writes every record
// not in present, from importWorkers goroutines, and returns how many it
// wrote. Another process may have written meanwhile; Import still refuses a
// different record, and running the same import again finishes the job
// (identical records are skipped).
func writeImport(ctx context.Context, s journal.Store, in io.ReadSeeker, name string, present map[uuid.UUID]bool) (int, error) {
	if _, err := in.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	g, gctx := errgroup.WithContext(ctx)
	work := make(chan importLine, importWorkers)
	var mu sync.Mutex
	written := 0
	for range importWorkers {
		g.Go(func() error {
			for l := range work {
				if err := s.Import(gctx, l.rec); err != nil {
					return fmt.Errorf("%s line %d: key %s: %w (some records were imported; run the import again once resolved: identical records are skipped)", name, l.line, l.rec.Key, err)
				}
				mu.Lock()
				written++
				mu.Unlock()
			}
			return nil
		})
	}
	g.Go(func() error {
		defer close(work)
		_, err := scanExport(in, name, func(_ uuid.UUID, line int, rec *journal.Record) error {
			if present[rec.Key] {
				return nil
			}
			select {
			case work <- importLine{line: line, rec: *rec}:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		})
		return err
	})
	err := g.Wait()
	return written, err
}

// openImportInput opens the export to read twice: the file, or standard
// input copied to a temporary file (mode 0600: an export holds secrets).
func openImportInput(e *env, input string) (io.ReadSeeker, string, func(), error) {
	if input != "-" {
		f, err := os.Open(input)
		if err != nil {
			return nil, "", nil, usageErrorf("import: %v", err)
		}
		return f, input, func() { f.Close() }, nil
	}
	if e.stdinTTY {
		return nil, "", nil, usageErrorf("import reads an export from FILE or standard input, and standard input is a terminal; run agentctl import FILE")
	}
	f, err := os.CreateTemp("", "agentctl-import-*.jsonl")
	if err != nil {
		return nil, "", nil, err
	}
	cleanup := func() { f.Close(); os.Remove(f.Name()) }
	if _, err := io.Copy(f, e.stdin); err != nil {
		cleanup()
		return nil, "", nil, fmt.Errorf("reading standard input: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		cleanup()
		return nil, "", nil, err
	}
	return f, "standard input", cleanup, nil
}

// importLine is one parsed record with where it came from.
type importLine struct {
	line int
	rec  journal.Record
}

// journalExists reports whether the journal is there: the file exists, or
// the PostgreSQL schema holds a journal.
func journalExists(ctx context.Context, e *env, j *journalFlags) (bool, error) {
	if !isRemote(j.location) {
		_, err := os.Stat(j.location)
		return !errors.Is(err, fs.ErrNotExist), nil
	}
	s, err := j.open(ctx, e, true)
	var ce *cliError
	if errors.As(err, &ce) && ce.code == exitNoJournal {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, s.Close()
}

// sameRecord compares two records through their export form, which holds
// every field.
func sameRecord(a, b *journal.Record) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// scanExport parses an export: its header line, then records, calling fn
// for each record with the header's namespace. Everything is checked
// before fn sees a record: the header (required: it carries the namespace
// and says the lines are sealed), each line's checksum, and that the
// record is one the journal's state machine could have produced (the
// validator every store's Import applies). A line that fails, or a key
// seen twice, stops it with an error naming the line.
func scanExport(r io.Reader, name string, fn func(ns uuid.UUID, line int, rec *journal.Record) error) (uuid.UUID, error) {
	var ns uuid.UUID
	seen := map[uuid.UUID]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 256<<20)
	line := 0
	bad := func(format string, args ...any) error {
		return usageErrorf("%s line %d: %s; nothing was imported", name, line, fmt.Sprintf(format, args...))
	}
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if ns == uuid.Nil {
			u, err := readHeader(b)
			if err != nil {
				return ns, bad("%v", err)
			}
			ns = u
			continue
		}
		rec, err := unsealLine(b)
		switch {
		case errors.Is(err, errUnsealed):
			return ns, bad("the record has no checksum")
		case err != nil:
			return ns, bad("%v", err)
		}
		if err := rec.Validate(); err != nil {
			return ns, bad("import: %v", err)
		}
		if prev, dup := seen[rec.Key]; dup {
			return ns, bad("key %s again (first on line %d)", rec.Key, prev)
		}
		seen[rec.Key] = line
		if err := fn(ns, line, &rec); err != nil {
			return ns, err
		}
	}
	if err := sc.Err(); err != nil {
		return ns, fmt.Errorf("reading %s after line %d: %w", name, line, err)
	}
	if ns == uuid.Nil {
		return ns, usageErrorf("%s is empty: an export starts with its header line; nothing was imported", name)
	}
	return ns, nil
}

// readHeader parses an export's first line and returns its namespace.
func readHeader(b []byte) (uuid.UUID, error) {
	if !bytes.Contains(b, []byte(`"agentonce_export"`)) {
		return uuid.Nil, errors.New("no export header (the first line of agentctl export names the format and the journal's namespace); " +
			"a file without one cannot be checked against the journal's namespace")
	}
	var h exportHeader
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return uuid.Nil, fmt.Errorf("export header: %v", err)
	}
	if h.Export != exportFormat {
		return uuid.Nil, fmt.Errorf("export format %d; this agentctl reads format %d (sealed lines): export again with this agentctl", h.Export, exportFormat)
	}
	if h.Checksum != sealName {
		return uuid.Nil, fmt.Errorf("export header: checksum %q; this agentctl reads %q", h.Checksum, sealName)
	}
	u, err := uuid.Parse(h.Namespace)
	if err != nil || u == uuid.Nil {
		return uuid.Nil, fmt.Errorf("export header: namespace %q is not a UUID", h.Namespace)
	}
	return u, nil
}

// readExport parses a whole export into memory (for tests and small
// inputs).
func readExport(r io.Reader, name string) (uuid.UUID, []importLine, error) {
	var out []importLine
	ns, err := scanExport(r, name, func(_ uuid.UUID, line int, rec *journal.Record) error {
		out = append(out, importLine{line: line, rec: *rec})
		return nil
	})
	return ns, out, err
}
