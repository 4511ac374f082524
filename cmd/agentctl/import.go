package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
)

var importCommand = &command{
	name:    "import",
	args:    "[FILE | -] [--create] [flags]",
	summary: "read records from an export (JSON Lines) into a journal",
	long: `Reads an export (agentctl export) from FILE or standard input and writes its
records into the journal as they are: state, attempts and times kept.

Nothing is written until the whole input has been read and checked: every
line must parse, and every record must either be new or identical to the
one the journal already holds (identical ones are skipped). A bad line or
a conflicting record is reported with its line number and nothing is
imported.

The export's namespace must be the journal's, or keys derived later would
not match the imported records. --create creates the journal (a bbolt file)
when it does not exist, with the export's namespace.`,
	main: importMain,
}

type importOptions struct {
	journal journalFlags
	input   string
	create  bool
}

func importMain(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	var o importOptions
	o.journal.register(fs)
	fs.BoolVar(&o.create, "create", false, "create the journal file if it does not exist")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch len(pos) {
	case 0:
		o.input = "-"
	case 1:
		o.input = pos[0]
	default:
		return usageErrorf("want at most one FILE, got %d arguments", len(pos))
	}
	return runImport(ctx, e, &o)
}

// importLine is one parsed record with where it came from.
type importLine struct {
	line int
	rec  journal.Record
}

func runImport(ctx context.Context, e *env, o *importOptions) error {
	if err := o.journal.resolve(e); err != nil {
		return err
	}
	var in io.Reader
	name := o.input
	if o.input == "-" {
		if e.stdinTTY {
			return usageErrorf("import reads an export from FILE or standard input, and standard input is a terminal; run agentctl import FILE")
		}
		in, name = e.stdin, "standard input"
	} else {
		f, err := os.Open(o.input)
		if err != nil {
			return usageErrorf("import: %v", err)
		}
		defer f.Close()
		in = f
	}

	// Pass 1: read and check everything before writing anything. The
	// records are kept in memory (a journal export is its records' size).
	ns, recs, err := readExport(in, name)
	if err != nil {
		return err
	}

	exists, err := journalExists(ctx, e, &o.journal)
	if err != nil {
		return err
	}
	create := o.create && !exists
	if create && ns == uuid.Nil {
		return usageErrorf("%s has no export header, so its namespace is unknown; import it into an existing journal", name)
	}
	fresh := recs
	if !create {
		// Check against a read-only open, so that a refused import leaves
		// the file as it was, byte for byte.
		if fresh, err = checkImport(ctx, e, o, name, ns, recs); err != nil {
			return err
		}
	}

	var s journal.Store
	if create {
		s, err = createJournal(ctx, o.journal.location, ns, o.journal.lockTimeout, e.now)
	} else {
		s, err = o.journal.open(ctx, e, false)
	}
	if err != nil {
		return err
	}
	defer s.Close()

	// Pass 2: write. Another process may have written meanwhile; Import
	// still refuses a different record.
	for i, l := range fresh {
		if err := s.Import(ctx, l.rec); err != nil {
			return fmt.Errorf("%s line %d: key %s: %w (the %d records before it were imported)", name, l.line, l.rec.Key, err, i)
		}
	}
	if err := s.Close(); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "imported %d records into %s (%d already present)\n", len(fresh), o.journal.location, len(recs)-len(fresh))
	return nil
}

// journalExists reports whether the journal is there: the file exists, or
// the PostgreSQL schema holds a journal.
func journalExists(ctx context.Context, e *env, j *journalFlags) (bool, error) {
	if !isPostgresURL(j.location) {
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

// checkImport opens the journal read-only and returns the records it does
// not hold yet, or an error if the namespace differs or a record with the
// same key differs.
func checkImport(ctx context.Context, e *env, o *importOptions, name string, ns uuid.UUID, recs []importLine) ([]importLine, error) {
	s, err := o.journal.open(ctx, e, true)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if ns != uuid.Nil && ns != s.Namespace() {
		return nil, &cliError{code: exitConflict,
			err:  fmt.Errorf("%s was exported from a journal with another namespace than %s", name, o.journal.location),
			hint: "its keys would not match: import into a new journal with --create"}
	}
	var fresh []importLine
	for _, l := range recs {
		old, err := s.Get(ctx, l.rec.Key)
		switch {
		case isNotFound(err):
			fresh = append(fresh, l)
		case err != nil:
			return nil, err
		case !sameRecord(&old, &l.rec):
			return nil, &cliError{code: exitConflict,
				err:  fmt.Errorf("%s line %d: key %s: %w", name, l.line, l.rec.Key, journal.ErrExists),
				hint: "nothing was imported; compare with agentctl show " + l.rec.Key.String()}
		}
	}
	return fresh, s.Close()
}

// sameRecord compares two records through their export form, which holds
// every field.
func sameRecord(a, b *journal.Record) bool {
	ja, err1 := json.Marshal(toJSON(a))
	jb, err2 := json.Marshal(toJSON(b))
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// readExport parses an export: an optional header line, then records.
func readExport(r io.Reader, name string) (uuid.UUID, []importLine, error) {
	var ns uuid.UUID
	var out []importLine
	seen := map[uuid.UUID]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 256<<20)
	line := 0
	bad := func(format string, args ...any) error {
		return usageErrorf("%s line %d: %s", name, line, fmt.Sprintf(format, args...))
	}
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if line == 1 && bytes.Contains(b, []byte(`"agentonce_export"`)) {
			var h exportHeader
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&h); err != nil {
				return ns, nil, bad("export header: %v", err)
			}
			if h.Export != exportFormat {
				return ns, nil, bad("export format %d; this agentctl reads format %d", h.Export, exportFormat)
			}
			u, err := uuid.Parse(h.Namespace)
			if err != nil || u == uuid.Nil {
				return ns, nil, bad("export header: namespace %q is not a UUID", h.Namespace)
			}
			ns = u
			continue
		}
		var j recordJSON
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&j); err != nil {
			return ns, nil, bad("%v", err)
		}
		if dec.More() {
			return ns, nil, bad("more than one JSON value on the line")
		}
		rec, err := fromJSON(&j)
		if err != nil {
			return ns, nil, bad("%v", err)
		}
		if prev, dup := seen[rec.Key]; dup {
			return ns, nil, bad("key %s again (first on line %d)", rec.Key, prev)
		}
		seen[rec.Key] = line
		out = append(out, importLine{line: line, rec: rec})
	}
	if err := sc.Err(); err != nil {
		return ns, nil, fmt.Errorf("reading %s after line %d: %w", name, line, err)
	}
	return ns, out, nil
}
