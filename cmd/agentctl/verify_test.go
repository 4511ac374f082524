package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	bolt "go.etcd.io/bbolt"
)

// damageBolt replaces old by new (of the same length) in the value stored
// under key in the bbolt file at path, as a failing disk would: opened with
// bbolt itself, not through the journal.
func damageBolt(t *testing.T, path string, key []byte, old, new string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("records"))
		val := append([]byte(nil), b.Get(key)...)
		at := bytes.Index(val, []byte(old))
		if at < 0 {
			t.Fatalf("record %x does not hold %q", key, old)
		}
		copy(val[at:], new)
		return b.Put(key, val)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// verifyReport runs verify --json and decodes its report.
func verifyReport(t *testing.T, loc string) (verifyJSON, int) {
	t.Helper()
	r := agentctl(t, false, "verify", "--json", "--journal", loc)
	var out verifyJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("verify --json = %d, %q, %q: %v", r.code, r.stdout, r.stderr, err)
	}
	return out, r.code
}

func damagedKeys(out verifyJSON) []string {
	var keys []string
	for _, d := range out.Damaged {
		keys = append(keys, d.Key)
	}
	slices.Sort(keys)
	return keys
}

func TestVerifyBolt(t *testing.T) {
	fx := buildFixture(t)
	if r := agentctl(t, false, "verify", "--journal", fx.path); r.code != 0 || r.stdout != fmt.Sprintf("# %d records, 0 damaged\n", fixtureSize) {
		t.Fatalf("verify of an intact journal = %d, %q, %q; want 0 and the count", r.code, r.stdout, r.stderr)
	}
	if r := agentctl(t, true, "verify", "--journal", fx.path); r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("All %d records", fixtureSize)) {
		t.Errorf("verify on a terminal = %d, %q", r.code, r.stdout)
	}

	search, book := fx.keys[fxSearch], fx.keys[fxBook]
	damageBolt(t, fx.path, search[:], `{"hits":3}`, `{"hits":8}`)
	damageBolt(t, fx.path, book[:], "no seats", "no seatz")
	want := []string{search.String(), book.String()}
	slices.Sort(want)

	r := agentctl(t, false, "verify", "--journal", fx.path)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != exitCorrupt || len(lines) != 3 || lines[2] != fmt.Sprintf("# %d records, 2 damaged", fixtureSize) {
		t.Fatalf("verify of a damaged journal = %d, %q, %q; want %d, two records and the count", r.code, r.stdout, r.stderr, exitCorrupt)
	}
	var got []string
	for _, l := range lines[:2] {
		key, problem, _ := strings.Cut(l, "\t")
		got = append(got, key)
		if !strings.Contains(problem, "checksum mismatch") {
			t.Errorf("verify line %q; want the problem to say checksum mismatch", l)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("verify lists %v; want %v", got, want)
	}

	out, code := verifyReport(t, fx.path)
	if code != exitCorrupt || out.Records != fixtureSize || !slices.Equal(damagedKeys(out), want) || out.Journal != fx.path {
		t.Errorf("verify --json = %d, %+v; want %d, %d records, damaged %v", code, out, exitCorrupt, fixtureSize, want)
	}
	if r := agentctl(t, true, "verify", "--journal", fx.path); r.code != exitCorrupt ||
		!strings.Contains(r.stdout, search.String()) || !strings.Contains(r.stdout, fmt.Sprintf("2 of %d records", fixtureSize)) {
		t.Errorf("verify on a terminal = %d, %q", r.code, r.stdout)
	}
	// The other commands refuse the damaged record instead of showing it.
	if r := agentctl(t, false, "show", search.String(), "--journal", fx.path); r.code != exitCorrupt || strings.Contains(r.stdout, `"hits":8`) {
		t.Errorf("show of the damaged record = %d, %q, %q; want %d and no output", r.code, r.stdout, r.stderr, exitCorrupt)
	}

	// A value under a key that is not a key is damage too, reported
	// without stopping the scan.
	db, err := bolt.Open(fx.path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("records")).Put([]byte("abc"), []byte{1}) })
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, code = verifyReport(t, fx.path)
	if code != exitCorrupt || out.Records != fixtureSize+1 || len(out.Damaged) != 3 ||
		!slices.Contains(damagedKeys(out), uuid.Nil.String()) {
		t.Errorf("verify with a short key = %d, %+v; want 3 damaged, one under the nil key", code, out)
	}
}

func TestVerifyBoltErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := dir + "/garbage.db"
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("not a journal\n"), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"verify", "--journal", dir + "/missing.db"}, exitNoJournal},
		{[]string{"verify", "--journal", garbage}, exitCorrupt},
		{[]string{"verify", "--journal", garbage, "extra"}, exitUsage},
		{[]string{"verify"}, exitUsage},
	} {
		if r := agentctl(t, false, tt.args...); r.code != tt.code || r.stderr == "" {
			t.Errorf("agentctl %v = %d, %q; want %d and an error line", tt.args, r.code, r.stderr, tt.code)
		}
	}
}

func TestVerifyPostgres(t *testing.T) {
	pg := pgJournal(t)
	fx := buildFixture(t)
	if r := agentctl(t, false, "import", "--create", "--journal", pg, writeFile(t, exportOf(t, fx.path))); r.code != 0 {
		t.Fatalf("import into PostgreSQL = %d, %q", r.code, r.stderr)
	}
	if out, code := verifyReport(t, pg); code != 0 || out.Records != fixtureSize || len(out.Damaged) != 0 {
		t.Fatalf("verify of an intact PostgreSQL journal = %d, %+v; want 0, %d records, none damaged", code, out, fixtureSize)
	}

	u, _ := url.Parse(pg)
	table := pgx.Identifier{u.Query().Get("schema"), "records"}.Sanitize()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv("AGENTONCE_PG_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	search := fx.keys[fxSearch]
	if _, err := conn.Exec(ctx, `UPDATE `+table+` SET output = convert_to('{"hits":8}', 'UTF8') WHERE key = $1`, search); err != nil {
		t.Fatal(err)
	}
	out, code := verifyReport(t, pg)
	if code != exitCorrupt || out.Records != fixtureSize || !slices.Equal(damagedKeys(out), []string{search.String()}) ||
		!strings.Contains(out.Damaged[0].Problem, "checksum mismatch") {
		t.Errorf("verify after an UPDATE of %s's output = %d, %+v; want %d and that record, checksum mismatch", search, code, out, exitCorrupt)
	}
	if r := agentctl(t, false, "show", search.String(), "--journal", pg); r.code != exitCorrupt || strings.Contains(r.stdout, `"hits":8`) {
		t.Errorf("show of the damaged row = %d, %q, %q; want %d and no output", r.code, r.stdout, r.stderr, exitCorrupt)
	}
}
