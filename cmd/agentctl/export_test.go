package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

// exportOf runs agentctl export on path and returns its output.
func exportOf(t *testing.T, path string) string {
	t.Helper()
	r := agentctl(t, false, "export", "--journal", path)
	if r.code != 0 {
		t.Fatalf("export %s = %d, %s", path, r.code, r.stderr)
	}
	return r.stdout
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "export.jsonl")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExportImportRoundTrip: export, import into a new journal, export
// again: identical lines, and the new journal answers the same keys.
func TestExportImportRoundTrip(t *testing.T) {
	fx := buildFixture(t)
	first := exportOf(t, fx.path)
	if n := strings.Count(first, "\n"); n != fixtureSize+1 {
		t.Fatalf("export has %d lines; want a header and %d records", n, fixtureSize)
	}
	if !strings.HasPrefix(first, `{"agentonce_export":3,"seal":"hmac-sha256","key_id":"`+exportSealKey(testNS).id()+`"}`+"\n") || strings.Contains(first, testNS.String()) {
		t.Errorf("export header = %q", strings.SplitN(first, "\n", 2)[0])
	}

	dst := filepath.Join(t.TempDir(), "copy.db")
	r := agentctl(t, false, "import", writeFile(t, first), "--journal", dst, "--create")
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("imported %d records", fixtureSize)) {
		t.Fatalf("import = %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	second := exportOf(t, dst)
	if first != second {
		t.Errorf("export after import differs:\n--- first ---\n%s--- second ---\n%s", first, second)
	}
	fi, err := os.Stat(dst)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("imported journal mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}

	// The copy keeps the namespace, so the harness derives the same keys
	// and is answered from it.
	s, err := bolt.Open(dst, &bolt.Options{Journal: journal.Options{ReadOnly: true, Now: func() time.Time { return testNow }}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Namespace() != testNS {
		t.Errorf("imported namespace = %s; want %s", s.Namespace(), testNS)
	}
	rec, err := s.Get(context.Background(), fx.keys[fxResolved])
	if err != nil || rec.Resolution == nil || rec.Resolution.By != "bob@ops" {
		t.Errorf("imported resolved record = %+v, %v", rec, err)
	}
	s.Close()

	// Importing again is a no-op: every record is already there, identical.
	r = agentctl(t, false, "import", "--journal", dst, writeFile(t, first))
	if r.code != 0 || !strings.Contains(r.stdout, "imported 0 records") || !strings.Contains(r.stdout, fmt.Sprintf("%d already present", fixtureSize)) {
		t.Errorf("second import = %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	// (The export is not compared again: opening the journal for writing
	// may end the leases of the pending records, whose owners are gone.)
}

// TestImportFromStdin reads the export from standard input.
func TestImportFromStdin(t *testing.T) {
	fx := buildFixture(t)
	first := exportOf(t, fx.path)
	dst := filepath.Join(t.TempDir(), "copy.db")
	e, out, errb := testEnv(false)
	e.stdin = strings.NewReader(first)
	if code := run(context.Background(), e, []string{"import", "--journal", dst, "--create", "-"}); code != 0 {
		t.Fatalf("import - = %d, %s", code, errb)
	}
	if !strings.Contains(out.String(), fmt.Sprintf("imported %d records", fixtureSize)) || exportOf(t, dst) != first {
		t.Errorf("import from stdin: %q", out)
	}

	// A terminal on standard input: refuse rather than wait.
	e, _, errb = testEnv(true)
	e.stdinTTY = true
	if code := run(context.Background(), e, []string{"import", "--journal", dst}); code != exitUsage || !strings.Contains(errb.String(), "standard input is a terminal") {
		t.Errorf("import from a terminal = %d, %q", code, errb)
	}
}

func TestImportRejectsAndWritesNothing(t *testing.T) {
	fx := buildFixture(t)
	exp := exportOf(t, fx.path)
	lines := strings.Split(strings.TrimSuffix(exp, "\n"), "\n")
	header, recs := lines[0], lines[1:]

	// A journal holding one record that differs from the export's.
	changed := filepath.Join(t.TempDir(), "changed.db")
	r := agentctl(t, false, "import", "--journal", changed, "--create", writeFile(t, header+"\n"+recs[3]+"\n"))
	if r.code != 0 {
		t.Fatalf("setup import = %d, %s", r.code, r.stderr)
	}

	tests := []struct {
		name    string
		input   string
		journal string
		code    int
		want    string
	}{
		{"bad json", header + "\n" + recs[0] + "\n{\"key\":\n", "", exitUsage, "line 3"},
		{"unknown field", header + "\n" + reseal(t, strings.Replace(recs[0], `"version":1`, `"version":1,"colour":"red"`, 1)) + "\n", "", exitUsage, `line 2: json: unknown field "colour"`},
		{"bad state", header + "\n" + reseal(t, strings.Replace(recs[0], `"state":"`, `"state":"x`, 1)) + "\n", "", exitUsage, "line 2: unknown state"},
		{"bad effect", header + "\n" + reseal(t, strings.Replace(recs[0], `"effect":"`, `"effect":"x`, 1)) + "\n", "", exitUsage, "line 2: unknown effect"},
		{"duplicate", header + "\n" + recs[0] + "\n" + recs[0] + "\n", "", exitUsage, "line 3: key"},
		{"other namespace", strings.Replace(header, exportSealKey(testNS).id(), exportSealKey(uuid.New()).id(), 1) + "\n" + recs[0] + "\n", changed, exitConflict, "line 1: the export is sealed with key"},
		{"different record", header + "\n" + recs[0] + "\n" + reseal(t, strings.Replace(recs[3], `"turn":"`, `"turn":"9`, 1)) + "\n", changed, exitConflict, "line 3"},
		{"nil key", header + "\n" + recs[0] + "\n" + reseal(t, strings.Replace(recs[1], keyOfLine(recs[1]), uuid.Nil.String(), 1)) + "\n", "", exitUsage, "line 3: key is the nil UUID"},
		{"newer version", header + "\n" + reseal(t, strings.Replace(recs[0], `"version":1`, `"version":99`, 1)) + "\n", "", exitUsage, "line 2: record version 99"},
		{"no header on create", strings.Join(recs, "\n") + "\n", "", exitUsage, "no export header"},
		// The issue-23 probes: a tampered output replayed as the answer, a
		// file without a header into an existing journal (no namespace
		// check), an unsealed line, and a record the state machine could
		// not have produced.
		{"tampered output", header + "\n" + tamperOutput(t, recs) + "\n", "", exitUsage, "line 2: the record does not match its seal"},
		{"no header into a journal", strings.Join(recs, "\n") + "\n", changed, exitUsage, "no export header"},
		{"unsealed line", header + "\n" + unseal(t, recs[0]) + "\n", "", exitUsage, "line 2: the record has no seal"},
		{"format 1", `{"agentonce_export":1,"namespace":"` + testNS.String() + `"}` + "\n" + unseal(t, recs[0]) + "\n", "", exitUsage, "line 1: export format 1"},
		{"token 0", header + "\n" + editLine(t, recs[0], func(m map[string]any) { m["lease"].(map[string]any)["token"] = 0 }) + "\n", "", exitUsage, "line 2: import: invalid request"},
		{"attempt ends before it starts", header + "\n" + endBeforeStart(t, recs) + "\n", "", exitUsage, "ends"},
	}
	for _, tt := range tests {
		dst := tt.journal
		if dst == "" {
			dst = filepath.Join(t.TempDir(), "new.db")
		}
		var before [32]byte
		if _, err := os.Stat(dst); err == nil {
			before = fileHash(t, dst)
		}
		r := agentctl(t, false, "import", "--journal", dst, "--create", writeFile(t, tt.input))
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("import %s = %d, %q; want %d and one line containing %q", tt.name, r.code, r.stderr, tt.code, tt.want)
		}
		if tt.journal == "" {
			if _, err := os.Stat(dst); err == nil {
				t.Errorf("import %s created %s", tt.name, dst)
			}
		} else if fileHash(t, dst) != before {
			t.Errorf("import %s modified the journal", tt.name)
		}
	}

	// Without --create a missing journal is an error, as everywhere.
	missing := filepath.Join(t.TempDir(), "missing.db")
	r = agentctl(t, false, "import", "--journal", missing, writeFile(t, exp))
	if r.code != exitNoJournal {
		t.Errorf("import without --create = %d, %q; want %d", r.code, r.stderr, exitNoJournal)
	}
}

func TestExportOutputFile(t *testing.T) {
	fx := buildFixture(t)
	out := filepath.Join(t.TempDir(), "backup.jsonl")
	r := agentctl(t, false, "export", "--journal", fx.path, "--output", out)
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("export --output = %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil || string(b) != exportOf(t, fx.path) {
		t.Errorf("export --output wrote %d bytes (%v); want the same as stdout", len(b), err)
	}
	if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o600 {
		t.Errorf("export file mode = %v; want 0600", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(out))
	if len(entries) != 1 {
		t.Errorf("export left %d files in the directory; want 1", len(entries))
	}
}

// keyOfLine returns the "key" of an exported record line.
func keyOfLine(line string) string {
	return strings.SplitN(strings.SplitN(line, `"key":"`, 2)[1], `"`, 2)[0]
}

// unseal drops a line's seal member.
func unseal(t *testing.T, line string) string {
	t.Helper()
	i := strings.LastIndex(line, `,"seal":"`)
	if i < 0 {
		t.Fatalf("line has no seal: %s", line)
	}
	return line[:i] + "}"
}

// reseal gives an edited line a seal that matches it again, as someone who
// holds the namespace and edits an export on purpose would (to reach the
// checks after the seal's).
func reseal(t *testing.T, line string) string {
	t.Helper()
	obj := unseal(t, line)
	var rec journal.Record
	canon := []byte(obj)
	if json.Unmarshal(canon, &rec) == nil {
		canon, _ = canonicalRecord(&rec)
	}
	return obj[:len(obj)-1] + `,"seal":"` + exportSealKey(testNS).mac(canon) + `"}`
}

// tamperOutput changes the output of the export's first succeeded record,
// keeping its old seal.
func tamperOutput(t *testing.T, recs []string) string {
	t.Helper()
	for _, l := range recs {
		if strings.Contains(l, `"state":"succeeded"`) && strings.Contains(l, `"output":{`) {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatal(err)
			}
			m["output"] = map[string]any{"charged": 999999}
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
	t.Fatal("no succeeded record with an output in the fixture")
	return ""
}

// editLine changes a line's record through f and seals it again.
func editLine(t *testing.T, line string, f func(m map[string]any)) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(unseal(t, line)), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return reseal(t, string(b[:len(b)-1])+`,"seal":""}`)
}

// endBeforeStart: the first closed attempt's end moved before its start,
// sealed again.
func endBeforeStart(t *testing.T, recs []string) string {
	t.Helper()
	for _, l := range recs {
		if !strings.Contains(l, `"end":"`) {
			continue
		}
		return editLine(t, l, func(m map[string]any) {
			for _, a := range m["attempts"].([]any) {
				if att := a.(map[string]any); att["end"] != nil {
					att["end"] = "2000-01-01T00:00:00Z"
					return
				}
			}
		})
	}
	t.Fatal("no record with a closed attempt in the fixture")
	return ""
}
