package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/retryclass"
)

// These tests build their forgeries from the documented format alone (the
// seal's key derivation written out again here), as an attacker would.

// hmacHex is HMAC-SHA-256 of msg under key, in hex.
func hmacHex(key, msg []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return hex.EncodeToString(m.Sum(nil))
}

// sealKeyOf is the documented seal key of namespace ns.
func sealKeyOf(ns uuid.UUID) []byte {
	m := hmac.New(sha256.New, ns[:])
	m.Write([]byte("agentonce export seal v1"))
	return m.Sum(nil)
}

// recordObject is an exported line without its last member (the seal, or
// an older export's checksum): the record's canonical JSON.
func recordObject(t *testing.T, line string) string {
	t.Helper()
	i := strings.LastIndex(line, `,"`)
	if i < 0 {
		t.Fatalf("not an exported line: %s", line)
	}
	return line[:i] + "}"
}

// forgedSearch is the fixture's succeeded search with its output changed
// from {"hits":3} to {"hits":999}, as canonical JSON without a seal.
func forgedSearch(t *testing.T, recs []string) string {
	t.Helper()
	for _, l := range recs {
		if strings.Contains(l, `"output":{"hits":3}`) {
			return strings.Replace(recordObject(t, l), `"output":{"hits":3}`, `"output":{"hits":999}`, 1)
		}
	}
	t.Fatal("no search record with output {\"hits\":3} in the export")
	return ""
}

// withMember appends a member to a JSON object.
func withMember(obj, name, value string) string {
	return obj[:len(obj)-1] + `,"` + name + `":"` + value + `"}`
}

// countRecords opens a bbolt journal read-only and counts its records.
func countRecords(t *testing.T, path string) int {
	t.Helper()
	s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{ReadOnly: true, Now: func() time.Time { return testNow }}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 0
	for _, err := range s.List(context.Background(), journal.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// TestImportRefusesForgedSeal: a forged output sealed with anything but
// the journal's namespace is refused, into an existing journal (its record
// count and bytes unchanged) and with --create (nothing created), with an
// error naming the line and what was wrong.
func TestImportRefusesForgedSeal(t *testing.T) {
	fx := buildFixture(t)
	exp := exportOf(t, fx.path)
	lines := strings.Split(strings.TrimSuffix(exp, "\n"), "\n")
	header, recs := lines[0], lines[1:]
	forged := forgedSearch(t, recs)
	other := uuid.New()
	otherKey := sealKeyOf(other)
	sum := sha256.Sum256([]byte(forged))
	plain := hex.EncodeToString(sum[:])

	// An existing journal holding one record of the export (not the search).
	target := filepath.Join(t.TempDir(), "target.db")
	var keep string
	for _, l := range recs {
		if !strings.Contains(l, `"tool":"search"`) {
			keep = l
			break
		}
	}
	if r := agentctl(t, false, "import", "--journal", target, "--create", writeFile(t, header+"\n"+keep+"\n")); r.code != 0 {
		t.Fatalf("setup import = %d, %s", r.code, r.stderr)
	}

	tests := []struct {
		name, input string
		code        int
		want        string
	}{
		// The attack of old: the line's plain SHA-256 recomputed, in the
		// format that trusted it.
		{"plain sha256, format 2", `{"agentonce_export":2,"namespace":"` + testNS.String() + `","checksum":"sha256"}` + "\n" +
			withMember(forged, "checksum", plain) + "\n", exitUsage, "line 1: export format 2 seals its lines with a plain SHA-256"},
		{"plain sha256 as the seal", header + "\n" + withMember(forged, "seal", plain) + "\n", exitUsage, "line 2: the record does not match its seal"},
		{"hmac under another namespace", header + "\n" + withMember(forged, "seal", hmacHex(otherKey, []byte(forged))) + "\n",
			exitUsage, "line 2: the record does not match its seal"},
		{"hmac with the namespace as the key", header + "\n" + withMember(forged, "seal", hmacHex(testNS[:], []byte(forged))) + "\n",
			exitUsage, "line 2: the record does not match its seal"},
		{"export sealed under another namespace", `{"agentonce_export":3,"seal":"hmac-sha256","key_id":"` + hmacHex(otherKey, []byte("key id"))[:32] + `"}` + "\n" +
			withMember(forged, "seal", hmacHex(otherKey, []byte(forged))) + "\n", exitConflict, "line 1: the export is sealed with key"},
	}
	for _, tt := range tests {
		before, hash := countRecords(t, target), fileHash(t, target)
		r := agentctl(t, false, "import", "--journal", target, writeFile(t, tt.input))
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, "nothing was imported") {
			t.Errorf("import %s = %d, %q; want %d and %q", tt.name, r.code, r.stderr, tt.code, tt.want)
		}
		if after := countRecords(t, target); after != before || fileHash(t, target) != hash {
			t.Errorf("import %s: %d records before, %d after, or the file changed; want it untouched", tt.name, before, after)
		}

		fresh := filepath.Join(t.TempDir(), "fresh.db")
		r = agentctl(t, false, "import", "--journal", fresh, "--create", writeFile(t, tt.input))
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("import --create %s = %d, %q; want %d and %q", tt.name, r.code, r.stderr, tt.code, tt.want)
		}
		if _, err := os.Stat(fresh); err == nil {
			t.Errorf("import --create %s created the journal", tt.name)
		}
	}
}

// TestImportIntactReplaysTrueOutput: after a forged import is refused, the
// intact export imports, and the re-issued search is answered from the
// journal with its true output, the tool not run.
func TestImportIntactReplaysTrueOutput(t *testing.T) {
	fx := buildFixture(t)
	exp := exportOf(t, fx.path)
	lines := strings.Split(strings.TrimSuffix(exp, "\n"), "\n")
	forged := forgedSearch(t, lines[1:])
	sum := sha256.Sum256([]byte(forged))
	dst := filepath.Join(t.TempDir(), "copy.db")
	forgedFile := `{"agentonce_export":2,"namespace":"` + testNS.String() + `","checksum":"sha256"}` + "\n" +
		withMember(forged, "checksum", hex.EncodeToString(sum[:])) + "\n"
	if r := agentctl(t, false, "import", "--journal", dst, "--create", writeFile(t, forgedFile)); r.code == 0 {
		t.Fatalf("import of a forged output = 0, %q; want it refused", r.stdout)
	}
	if r := agentctl(t, false, "import", "--journal", dst, "--create", writeFile(t, exp)); r.code != 0 {
		t.Fatalf("import of the intact export = %d, %s", r.code, r.stderr)
	}

	s, err := bolt.Open(dst, &bolt.Options{Journal: journal.Options{Now: func() time.Time { return testNow }}})
	if err != nil {
		t.Fatal(err)
	}
	h := harness.New(s, &harness.Options{Owner: "restarted", Retry: &retryclass.Policy{MaxAttempts: 1, InFlightBudget: -1}})
	defer func() { h.Close(); s.Close() }()
	var runs atomic.Int32
	if err := h.Register(harness.Tool{Name: "search", Effect: journal.ReadOnly, Journal: true,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			return json.RawMessage(`{"hits":-1}`), nil
		}}); err != nil {
		t.Fatal(err)
	}
	res := h.Call(context.Background(), harness.ToolCall{Tenant: "acme", Session: "s1", Turn: "1", Tool: "search", Input: json.RawMessage(`{"q":"flights to Lisbon"}`)})
	if !res.OK() || !bytes.Equal(res.Output, []byte(`{"hits":3}`)) || runs.Load() != 0 || res.Key != fx.keys[fxSearch] {
		t.Errorf("re-issued search = %v %s (key %s), tool run %d times; want the true {\"hits\":3} from the journal, not run",
			res.Status, res.Output, res.Key, runs.Load())
	}
}

// TestImportReformatted: an export whose lines a tool rewrote (members
// reordered, whitespace added, CRLF line ends) imports, and exports again
// byte for byte as before; one spread over several lines is refused with
// an error that says so.
func TestImportReformatted(t *testing.T) {
	fx := buildFixture(t)
	exp := exportOf(t, fx.path)
	var out, spread strings.Builder
	for i, l := range strings.Split(strings.TrimSuffix(exp, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(m) // members sorted: the seal is no longer last
		if err != nil {
			t.Fatal(err)
		}
		var ind bytes.Buffer
		if err := json.Indent(&ind, b, "", "  "); err != nil {
			t.Fatal(err)
		}
		out.WriteString(strings.ReplaceAll(ind.String(), "\n", " ") + "\r\n")
		if i == 0 {
			spread.WriteString(l + "\n")
		} else {
			spread.WriteString(ind.String() + "\n")
		}
	}
	dst := filepath.Join(t.TempDir(), "copy.db")
	if r := agentctl(t, false, "import", "--journal", dst, "--create", writeFile(t, out.String())); r.code != 0 {
		t.Fatalf("import of a reformatted export = %d, %s", r.code, r.stderr)
	}
	if again := exportOf(t, dst); again != exp {
		t.Errorf("export after importing the reformatted file differs:\n%s\nwant\n%s", again, exp)
	}

	r := agentctl(t, false, "import", "--journal", filepath.Join(t.TempDir(), "new.db"), "--create", writeFile(t, spread.String()))
	if r.code != exitUsage || !strings.Contains(r.stderr, "line 2: not a record on one line") {
		t.Errorf("import of records spread over lines = %d, %q; want %d and an error saying the line is not a whole record", r.code, r.stderr, exitUsage)
	}
}

// TestImportCreateNeedsNamespace: the export does not carry the namespace,
// so import --create takes it from AGENTONCE_NAMESPACE and says so when it
// is missing or not a UUID, creating nothing.
func TestImportCreateNeedsNamespace(t *testing.T) {
	fx := buildFixture(t)
	in := writeFile(t, exportOf(t, fx.path))
	for v, want := range map[string]string{"": "needs the journal's namespace in AGENTONCE_NAMESPACE", "nope": `AGENTONCE_NAMESPACE="nope" is not a namespace`} {
		dst := filepath.Join(t.TempDir(), "new.db")
		e, _, errb := testEnv(false)
		e.getenv = func(string) string { return v }
		if code := run(context.Background(), e, []string{"import", "--journal", dst, "--create", in}); code != exitUsage || !strings.Contains(errb.String(), want) {
			t.Errorf("import --create with AGENTONCE_NAMESPACE=%q = %d, %q; want %d and %q", v, code, errb, exitUsage, want)
		}
		if _, err := os.Stat(dst); err == nil {
			t.Errorf("import --create with AGENTONCE_NAMESPACE=%q created the journal", v)
		}
	}
}
