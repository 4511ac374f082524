package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"

	"github.com/google/uuid"
	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/memory"
)

var importCommand = &command{
	name:    "import",
	args:    "[FILE | -] [--create] [flags]",
	summary: "read records from an export (JSON Lines) into a journal",
	long: `Reads an export (agentctl export) from FILE or standard input and writes its
records into the journal as they are: state, attempts and times kept.

Nothing is written until the whole input has been read and checked: the
header must be there (it names the key the lines are sealed with), every
line must parse and carry a seal that the journal's namespace makes for its
record, every record must be one the journal's state machine
could have produced (the check every store's Import makes), and every
record must either be new or identical to the one the journal already
holds (identical ones are skipped). A bad line or
a conflicting record is reported with its line number and nothing is
imported. The input is read twice (standard input is first copied to a
temporary file), so memory does not grow with the export's size.

The seals are checked with the journal's namespace: an export from a
journal with another namespace is refused (its keys would not match), and
so is a line changed by anyone who does not hold the namespace. --create
creates the journal (a bbolt file, or the PostgreSQL schema) when it does
not exist, with the namespace in AGENTONCE_NAMESPACE, which must be the one
the export was sealed with: the export does not carry it ('agentctl derive
--show-namespace' on the source journal prints it). An export of an older
agentctl (format 2, sealed with a plain SHA-256 that anyone who edits it can
recompute) is refused: export again from the source journal.`,
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
	written, err := writeImport(ctx, s, in, name, plan)
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
	ns      uuid.UUID          // the namespace the seals were checked with
	from    string             // where ns came from: the journal, or the environment
	present map[uuid.UUID]bool // records the journal already holds, identical
	total   int                // records in the export
}

// namespaceEnv holds the namespace import --create gives a new journal.
const namespaceEnv = "AGENTONCE_NAMESPACE"

// createNamespace is the namespace of a journal import --create makes:
// the export does not carry it (whoever holds it can seal lines), so the
// operator gives it, and the seals must have been made with it.
func createNamespace(e *env) (uuid.UUID, error) {
	v := e.getenv(namespaceEnv)
	if v == "" {
		return uuid.Nil, usageErrorf("import --create needs the journal's namespace in %s: an export does not carry it; "+
			"'agentctl derive --show-namespace' on the source journal prints it; nothing was imported", namespaceEnv)
	}
	ns, err := uuid.Parse(v)
	if err != nil || ns == uuid.Nil {
		return uuid.Nil, usageErrorf("%s=%q is not a namespace (a UUID); nothing was imported", namespaceEnv, v)
	}
	return ns, nil
}

// checkImport is pass 1: it reads and checks the whole export before
// anything is written. Against an existing journal the check runs on a
// read-only open, so that a refused import leaves the file as it was, byte
// for byte.
func checkImport(ctx context.Context, e *env, o *importOptions, in io.Reader, name string, exists, create bool) (*importPlan, error) {
	var check journal.Store
	plan := &importPlan{present: map[uuid.UUID]bool{}}
	if exists {
		var err error
		if check, err = o.journal.open(ctx, e, true); err != nil {
			return nil, err
		}
		defer check.Close()
		plan.ns, plan.from = check.Namespace(), o.journal.location+"'s namespace"
	} else {
		ns, err := createNamespace(e)
		if err != nil {
			return nil, err
		}
		plan.ns, plan.from = ns, "the namespace in "+namespaceEnv
	}
	err := scanExport(in, name, plan, func(line int, rec *journal.Record) error {
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
func writeImport(ctx context.Context, s journal.Store, in io.ReadSeeker, name string, plan *importPlan) (int, error) {
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
		err := scanExport(in, name, plan, func(line int, rec *journal.Record) error {
			if plan.present[rec.Key] {
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
// for each. Everything is checked before fn sees a record: the header
// (required: it says how the lines are sealed, and with which key, which
// must be the one plan.ns gives), each line's seal, and that the record is
// one the journal's state machine could have produced (the validator every
// store's Import applies). A line that fails, or a key seen twice, stops
// it with an error naming the line.
func scanExport(r io.Reader, name string, plan *importPlan, fn func(line int, rec *journal.Record) error) error {
	k := exportSealKey(plan.ns)
	header := false
	seen := map[uuid.UUID]int{}
	// An in-memory journal's Import is the validator every store's Import
	// applies: a record goes through it before the real journal sees any.
	check := memory.New(nil)
	defer check.Close()
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
		if !header {
			id, err := readHeader(b)
			if err != nil {
				return bad("%v", err)
			}
			if id != k.id() {
				return &cliError{code: exitConflict,
					err: fmt.Errorf("%s line %d: the export is sealed with key %s, and %s gives key %s: it comes from a journal with another namespace",
						name, line, id, plan.from, k.id()),
					hint: "nothing was imported: its keys would not match; import it into a new journal with --create and " +
						namespaceEnv + " set to its source journal's namespace"}
			}
			header = true
			continue
		}
		rec, err := unsealLine(k, b)
		switch {
		case errors.Is(err, errUnsealed):
			return bad("the record has no seal")
		case err != nil:
			return bad("%v", err)
		}
		if prev, dup := seen[rec.Key]; dup {
			return bad("key %s again (first on line %d)", rec.Key, prev)
		}
		if err := check.Import(context.Background(), rec); err != nil {
			return bad("%v", err)
		}
		seen[rec.Key] = line
		if err := fn(line, &rec); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s after line %d: %w", name, line, err)
	}
	if !header {
		return usageErrorf("%s is empty: an export starts with its header line; nothing was imported", name)
	}
	return nil
}

// readHeader parses an export's first line and returns the id of the key
// its lines are sealed with.
func readHeader(b []byte) (string, error) {
	if !bytes.Contains(b, []byte(`"agentonce_export"`)) {
		return "", errors.New("no export header (the first line of agentctl export names the format and the key the lines are sealed with); " +
			"a file without one cannot be checked")
	}
	var format struct {
		Export int `json:"agentonce_export"`
	}
	if err := json.Unmarshal(b, &format); err != nil {
		return "", fmt.Errorf("export header: %v", err)
	}
	switch {
	case format.Export == 2:
		return "", errors.New("export format 2 seals its lines with a plain SHA-256, which anyone who edits the file can recompute, " +
			"so its records cannot be told from forged ones: export again from the source journal with this agentctl")
	case format.Export != exportFormat:
		return "", fmt.Errorf("export format %d; this agentctl reads format %d (lines sealed with the namespace): "+
			"export again from the source journal with this agentctl", format.Export, exportFormat)
	}
	var h exportHeader
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return "", fmt.Errorf("export header: %v", err)
	}
	if h.Seal != sealName {
		return "", fmt.Errorf("export header: seal %q; this agentctl reads %q", h.Seal, sealName)
	}
	return h.KeyID, nil
}

// readExport parses a whole export sealed with ns into memory (for tests
// and small inputs).
func readExport(r io.Reader, name string, ns uuid.UUID) ([]importLine, error) {
	var out []importLine
	err := scanExport(r, name, &importPlan{ns: ns, from: "the namespace"}, func(line int, rec *journal.Record) error {
		out = append(out, importLine{line: line, rec: *rec})
		return nil
	})
	return out, err
}
