package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

// addExpired imports n records that are past their TTL at testNow, from
// many goroutines so that they share commits.
func addExpired(t *testing.T, path string, n int) {
	t.Helper()
	s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{Now: func() time.Time { return testNow }}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := testNow.Add(-30 * 24 * time.Hour)
	var g errgroup.Group
	const workers = 32
	for w := range workers {
		g.Go(func() error {
			for i := w; i < n; i += workers {
				if err := s.Import(context.Background(), bigRecord(testNS, base, i)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestCompactInPlace(t *testing.T) {
	fx := buildFixture(t)
	addExpired(t, fx.path, 3000)
	// bigRecord makes some records unknown and some pending (300 of
	// 3000): those never expire into a re-run, and gc keeps them.
	if r := agentctl(t, false, "gc", "--journal", fx.path); r.stdout != "removed\t2701\nkept_unknown\t300\n" {
		t.Fatalf("gc = %q, %q", r.stdout, r.stderr)
	}
	want := exportOf(t, fx.path)
	before, _ := os.Stat(fx.path)

	r := agentctl(t, false, "compact", "--journal", fx.path)
	if r.code != 0 || !strings.Contains(r.stdout, "replaced in place") {
		t.Fatalf("compact = %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	after, _ := os.Stat(fx.path)
	if after.Size() >= before.Size() {
		t.Errorf("compact: %d bytes -> %d; want smaller", before.Size(), after.Size())
	}
	if after.Mode().Perm() != 0o600 {
		t.Errorf("compacted journal mode = %v; want 0600", after.Mode().Perm())
	}
	if got := exportOf(t, fx.path); got != want {
		t.Errorf("records differ after compact")
	}
	if _, err := os.Stat(fx.path + ".compact"); err == nil {
		t.Errorf("compact left %s.compact", fx.path)
	}
	t.Logf("after gc of 3001 of 3012 records: %d bytes -> %d", before.Size(), after.Size())
}

func TestCompactOutput(t *testing.T) {
	fx := buildFixture(t)
	hash := fileHash(t, fx.path)
	dst := filepath.Join(t.TempDir(), "small.db")
	r := agentctl(t, false, "compact", "--journal", fx.path, "--output", dst)
	if r.code != 0 || !strings.Contains(r.stdout, "written to "+dst) {
		t.Fatalf("compact --output = %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	if fileHash(t, fx.path) != hash {
		t.Errorf("compact --output modified the journal")
	}
	if exportOf(t, dst) != exportOf(t, fx.path) {
		t.Errorf("compacted copy differs")
	}
	// The destination must not exist.
	r = agentctl(t, false, "compact", "--journal", fx.path, "--output", dst)
	if r.code != exitUsage || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("compact onto an existing file = %d, %q", r.code, r.stderr)
	}
}

func TestCompactRefusals(t *testing.T) {
	fx := buildFixture(t)
	s, err := bolt.Open(fx.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := agentctl(t, false, "compact", "--journal", fx.path)
	s.Close()
	if r.code != exitInUse || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("compact of a journal in use = %d, %q; want %d", r.code, r.stderr, exitInUse)
	}
	if _, err := os.Stat(fx.path + ".compact"); err == nil {
		t.Errorf("a refused compact left %s.compact", fx.path)
	}
	// A leftover from an interrupted compact is not overwritten.
	if err := os.WriteFile(fx.path+".compact", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = agentctl(t, false, "compact", "--journal", fx.path)
	if r.code != exitUsage || !strings.Contains(r.stderr, "interrupted compact") {
		t.Errorf("compact with a leftover = %d, %q", r.code, r.stderr)
	}
	missing := filepath.Join(t.TempDir(), "nope.db")
	if r := agentctl(t, false, "compact", "--journal", missing); r.code != exitNoJournal {
		t.Errorf("compact of a missing journal = %d, %q", r.code, r.stderr)
	}
}

func TestCompactProgressBar(t *testing.T) {
	fx := buildFixture(t)
	addExpired(t, fx.path, 12000) // more than one copy transaction
	old := progressMinBytes
	progressMinBytes = 0
	defer func() { progressMinBytes = old }()

	// The clock advances a second per read, so every update draws.
	e, out, errb := testEnv(true)
	now := testNow
	e.now = func() time.Time { now = now.Add(time.Second); return now }
	if code := run(context.Background(), e, []string{"compact", "--journal", fx.path}); code != 0 {
		t.Fatalf("compact = %d, %s", code, errb)
	}
	bar := errb.String()
	if !strings.Contains(bar, "\rcompacting 100% [##############################]") || !strings.HasSuffix(bar, "\n") || strings.Count(bar, "\r") < 2 {
		t.Errorf("progress bar = %q", bar)
	}
	if !strings.Contains(out.String(), "compacted") {
		t.Errorf("stdout = %q", out)
	}

	// Not a terminal: no bar.
	e, _, errb = testEnv(false)
	if code := run(context.Background(), e, []string{"compact", "--journal", fx.path}); code != 0 || errb.Len() != 0 {
		t.Errorf("compact without a terminal = %d, stderr %q", code, errb)
	}
}

func TestProgressBarThrottles(t *testing.T) {
	var buf bytes.Buffer
	now := testNow
	p := &progressBar{w: &buf, now: func() time.Time { return now }, label: "x"}
	p.update(1, 10)
	p.update(2, 10) // same instant: skipped
	now = now.Add(200 * time.Millisecond)
	p.update(5, 10)
	p.update(10, 10) // the last one always draws
	p.finish()
	if got, want := strings.Count(buf.String(), "\r"), 3; got != want {
		t.Errorf("drew %d times; want %d: %q", got, want, buf.String())
	}
	var nilBar *progressBar
	nilBar.update(1, 2)
	nilBar.finish()
}
