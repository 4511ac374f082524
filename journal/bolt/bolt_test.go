package bolt_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

func mustOpen(t testing.TB, path string, opts *bolt.Options) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(path, opts)
	if err != nil {
		t.Fatalf("OpenBolt(%s) error: %v", path, err)
	}
	return s
}

// fill writes n settled records through the store's ordinary calls and
// returns them.
func fill(t *testing.T, s journal.Store, n int) []journal.Record {
	t.Helper()
	ctx := context.Background()
	var out []journal.Record
	states := []journal.State{journal.StateSucceeded, journal.StateFailed, journal.StateSuppressed, journal.StateUnknown}
	for i := range n {
		req := benchRequest(uuid.New(), i%2 == 0)
		req.Intent.Turn = fmt.Sprint(i)
		res, err := s.Begin(ctx, req)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		c := journal.Completion{Key: req.Key, Token: res.Token, State: states[i%len(states)], ErrorClass: "c", ErrorMessage: "m"}
		if c.State == journal.StateSucceeded {
			c = journal.Completion{Key: req.Key, Token: res.Token, State: c.State, Output: []byte(fmt.Sprintf(`{"n":%d}`, i))}
		}
		r, err := s.Complete(ctx, c)
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		out = append(out, r)
	}
	return out
}

// bulk writes n settled records in a few big transactions.
func bulk(t *testing.T, s *bolt.Store, n int, now time.Time, ttl time.Duration) []journal.Record {
	t.Helper()
	recs := make([]journal.Record, n)
	for i := range recs {
		req := benchRequest(uuid.New(), true)
		req.Intent.Session = fmt.Sprintf("sess-%d", i%1000)
		recs[i] = journal.Record{
			Key: req.Key, Intent: req.Intent, Fingerprint: req.Fingerprint, Input: req.Input,
			State: journal.StateSucceeded, Output: benchOutput,
			Attempts: []journal.Attempt{{ID: "att-0001", Start: now, End: now}},
			Lease:    journal.Lease{Owner: req.Owner, Token: 1, Expires: now},
			Created:  now.Add(time.Duration(i)), Updated: now, Expires: now.Add(ttl),
		}
	}
	if err := bolt.BulkPut(s, recs); err != nil {
		t.Fatalf("BulkPut: %v", err)
	}
	return recs
}

func sameRecord(t *testing.T, what string, got, want journal.Record) {
	t.Helper()
	ge, we := bolt.EncodeRecord(nil, &got), bolt.EncodeRecord(nil, &want)
	if string(ge) != string(we) {
		t.Fatalf("%s: record %s = %+v; want %+v", what, want.Key, got, want)
	}
}

func TestBoltReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	s := mustOpen(t, path, nil)
	ns := s.Namespace()
	recs := fill(t, s, 40)
	// A non-durable begin still in the overlay is persisted by Close.
	ctx := context.Background()
	req := benchRequest(uuid.New(), false)
	res, err := s.Begin(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	recs = append(recs, res.Record)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = mustOpen(t, path, nil)
	if s.Namespace() != ns {
		t.Fatalf("Namespace() after reopen = %s; want %s", s.Namespace(), ns)
	}
	for _, want := range recs {
		got, err := s.Get(ctx, want.Key)
		if err != nil {
			t.Fatalf("Get(%s) after reopen: %v", want.Key, err)
		}
		if want.State == journal.StatePending {
			// Reopening ends the leases of the process that closed it, as
			// of the reopen by the store's clock (which the wall clock
			// may drift from).
			if !got.Lease.Expires.Before(want.Lease.Expires) || got.Lease.Expires.After(s.Now()) {
				t.Fatalf("lease after reopen expires %v; want the reopen time, before %v", got.Lease.Expires, want.Lease.Expires)
			}
			want.Lease.Expires = got.Lease.Expires
		}
		sameRecord(t, "Get after reopen", got, want)
	}
	st, err := s.Stats(ctx)
	if err != nil || st.Records != len(recs) || st.ByState[journal.StatePending] != 1 {
		t.Fatalf("Stats() after reopen = %+v, %v; want %d records, 1 pending", st, err, len(recs))
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("journal file mode = %v, %v; want 0600", info.Mode().Perm(), err)
	}
	s.Close()

	// The stored namespace wins; a different given one is refused.
	s = mustOpen(t, path, &bolt.Options{Journal: journal.Options{Namespace: ns}})
	s.Close()
	_, err = bolt.Open(path, &bolt.Options{Journal: journal.Options{Namespace: uuid.New()}})
	if !errors.Is(err, journal.ErrNamespaceMismatch) || !strings.Contains(err.Error(), path) {
		t.Fatalf("OpenBolt with another namespace error = %v; want ErrNamespaceMismatch naming %s", err, path)
	}
	given := uuid.New()
	p2 := filepath.Join(t.TempDir(), "given.db")
	s = mustOpen(t, p2, &bolt.Options{Journal: journal.Options{Namespace: given}})
	s.Close()
	s = mustOpen(t, p2, nil)
	defer s.Close()
	if s.Namespace() != given {
		t.Fatalf("Namespace() of a journal created with %s = %s", given, s.Namespace())
	}
}

const crashEnv = "AGENTONCE_JOURNAL_CRASH_CHILD"

// TestBoltCrashChild is the process TestBoltCrash kills: it writes records
// from several goroutines forever, printing each key once Complete returned.
func TestBoltCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("helper process for TestBoltCrash")
	}
	s, err := bolt.Open(path, nil)
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(3)
	}
	ctx := context.Background()
	var mu sync.Mutex
	for g := range 8 {
		go func() {
			for i := 0; ; i++ {
				key := uuid.New()
				req := benchRequest(key, (g+i)%2 == 0)
				res, err := s.Begin(ctx, req)
				if err != nil {
					fmt.Println("begin error:", err)
					os.Exit(3)
				}
				if i%3 == 0 {
					if err := s.StartAttempt(ctx, journal.AttemptRequest{Key: key, Token: res.Token, ID: "att-2", PrevClass: "retryable", Durable: i%2 == 0}); err != nil {
						fmt.Println("attempt error:", err)
						os.Exit(3)
					}
				}
				if _, err := s.Complete(ctx, journal.Completion{Key: key, Token: res.Token, State: journal.StateSucceeded, Output: []byte("out-" + key.String())}); err != nil {
					fmt.Println("complete error:", err)
					os.Exit(3)
				}
				mu.Lock()
				os.Stdout.WriteString("committed " + key.String() + "\n")
				mu.Unlock()
			}
		}()
	}
	select {}
}

// TestBoltCrash kills a writing process with SIGKILL, three times over the
// same file, and checks that every record it reported committed is intact
// and that every record in the file decodes.
//
// A SIGKILL loses no write the kernel accepted, so this test passes even
// with bbolt's NoSync set: whether Complete and a durable Begin wait for
// the disk is tested by the power-loss module instead
// (internal/powerloss: TestPowerLossMatrix, TestPowerLossAtEverySync),
// which drops every unsynced write.
func TestBoltCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	committed := map[uuid.UUID]bool{}
	for round := range 3 {
		// Killed mid-write: eight goroutines are beginning and completing.
		for _, key := range crashWriter(t, path, 100+150*round) {
			committed[key] = true
		}

		s := mustOpen(t, path, nil) // reads and decodes every record
		ctx := context.Background()
		for key := range committed {
			r, err := s.Get(ctx, key)
			if err != nil {
				t.Fatalf("round %d: committed key %s: Get error: %v", round, key, err)
			}
			if r.State != journal.StateSucceeded || string(r.Output) != "out-"+key.String() || r.Attempts[len(r.Attempts)-1].End.IsZero() {
				t.Fatalf("round %d: committed key %s = %s %q; want succeeded %q", round, key, r.State, r.Output, "out-"+key.String())
			}
		}
		total := 0
		for r, err := range s.List(ctx, journal.Filter{}) {
			if err != nil {
				t.Fatalf("round %d: List error: %v", round, err)
			}
			total++
			if r.State != journal.StatePending && r.State != journal.StateSucceeded {
				t.Fatalf("round %d: record %s in state %s", round, r.Key, r.State)
			}
		}
		t.Logf("round %d: %d committed so far, %d records in the file", round, len(committed), total)
		if total < len(committed) {
			t.Fatalf("round %d: %d records listed; want at least the %d committed", round, total, len(committed))
		}
		s.Close()
	}
}

const lockEnv = "AGENTONCE_JOURNAL_LOCK_CHILD"

// TestBoltLockChild holds a journal open until killed.
func TestBoltLockChild(t *testing.T) {
	path := os.Getenv(lockEnv)
	if path == "" {
		t.Skip("helper process for TestBoltLocked")
	}
	if _, err := bolt.Open(path, nil); err != nil {
		fmt.Println("open error:", err)
		os.Exit(3)
	}
	fmt.Println("locked")
	select {}
}

func TestBoltLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	mustOpen(t, path, nil).Close()

	t.Run("another process", func(t *testing.T) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBoltLockChild$")
		cmd.Env = append(os.Environ(), lockEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if line != "locked\n" {
			cmd.Process.Kill()
			t.Fatalf("child said %q; want locked", line)
		}
		for _, ro := range []bool{false, true} {
			start := time.Now()
			_, err = bolt.Open(path, &bolt.Options{Journal: journal.Options{ReadOnly: ro}, LockTimeout: 200 * time.Millisecond})
			if !errors.Is(err, journal.ErrInUse) || !strings.Contains(err.Error(), path) {
				t.Errorf("OpenBolt(read-only %v) while another process holds it: %v; want ErrInUse naming %s", ro, err, path)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("OpenBolt took %v with a 200ms lock timeout", d)
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		// The lock dies with its process.
		mustOpen(t, path, &bolt.Options{LockTimeout: 5 * time.Second}).Close()
	})

	t.Run("same process", func(t *testing.T) {
		// bbolt's flock belongs to the open file description, so a second
		// open in the same process is refused too.
		s := mustOpen(t, path, nil)
		defer s.Close()
		_, err := bolt.Open(path, &bolt.Options{LockTimeout: 100 * time.Millisecond})
		if !errors.Is(err, journal.ErrInUse) {
			t.Fatalf("second OpenBolt in one process: %v; want ErrInUse", err)
		}
	})
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// hwm is the size the journal's meta page says the file needs.
func hwm(t *testing.T, path string) int64 {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64
	db.View(func(tx *bbolt.Tx) error { n = tx.Size(); return nil })
	return n
}

func TestBoltBadFiles(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good.db")
	s := mustOpen(t, good, nil)
	bulk(t, s, 3000, time.Now(), time.Hour)
	s.Close()
	goodBytes, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	size := hwm(t, good)

	rawJournal := func(name string, edit func(tx *bbolt.Tx) error) string {
		path := writeFile(t, name, goodBytes)
		db, err := bbolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(edit); err != nil {
			t.Fatal(err)
		}
		db.Close()
		return path
	}
	notJournal := filepath.Join(t.TempDir(), "other.db")
	db, err := bbolt.Open(notJournal, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("widgets")); return err })
	db.Close()
	middle := writeFile(t, "middle.db", goodBytes)
	f, err := os.OpenFile(middle, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(randomBytes(int(size/2)), 2*4096) // past the two meta pages
	f.Close()

	cases := []struct {
		name string
		path string
		want error
	}{
		{"random bytes, 100", writeFile(t, "r100.db", randomBytes(100)), journal.ErrCorrupt},
		{"random bytes, 64 KiB", writeFile(t, "r64k.db", randomBytes(64<<10)), journal.ErrCorrupt},
		{"empty file", writeFile(t, "empty.db", nil), journal.ErrCorrupt},
		{"text file", writeFile(t, "text.db", []byte(strings.Repeat("not a journal\n", 1000))), journal.ErrCorrupt},
		{"truncated to 90%", writeFile(t, "t90.db", goodBytes[:size*9/10]), journal.ErrCorrupt},
		{"truncated to 50%", writeFile(t, "t50.db", goodBytes[:size/2]), journal.ErrCorrupt},
		{"truncated to one page", writeFile(t, "t1.db", goodBytes[:4096]), journal.ErrCorrupt},
		{"pages overwritten with random bytes", middle, journal.ErrCorrupt},
		{"bbolt file that is not a journal", notJournal, journal.ErrCorrupt},
		{"newer schema", rawJournal("newer.db", func(tx *bbolt.Tx) error {
			return tx.Bucket([]byte("meta")).Put([]byte("version"), []byte{99})
		}), journal.ErrNewerVersion},
		{"newer record", rawJournal("newrec.db", func(tx *bbolt.Tx) error {
			k := uuid.New()
			return tx.Bucket([]byte("records")).Put(k[:], []byte{journal.SchemaVersion + 1, 1, 16})
		}), journal.ErrNewerVersion},
		{"undecodable record", rawJournal("badrec.db", func(tx *bbolt.Tx) error {
			k := uuid.New()
			return tx.Bucket([]byte("records")).Put(k[:], []byte{journal.SchemaVersion, 1, 200})
		}), journal.ErrCorrupt},
		{"no records bucket", rawJournal("norecs.db", func(tx *bbolt.Tx) error {
			return tx.DeleteBucket([]byte("records"))
		}), journal.ErrCorrupt},
	}
	for _, tc := range cases {
		for _, ro := range []bool{false, true} {
			s, err := bolt.Open(tc.path, &bolt.Options{Journal: journal.Options{ReadOnly: ro}})
			if err == nil {
				// An open reads no record: the first query that reads
				// them all must find the damage.
				_, err = s.ScanStats(context.Background())
				s.Close()
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("OpenBolt(%s, read-only %v) error = %v; want %v naming the file", tc.name, ro, err, tc.want)
			}
		}
	}

	// Cutting only the free space past the last used page loses nothing.
	if info, _ := os.Stat(good); info.Size() > size {
		s := mustOpen(t, writeFile(t, "tail.db", goodBytes[:size]), nil)
		if st, err := s.Stats(context.Background()); err != nil || st.Records != 3000 {
			t.Errorf("journal cut at its high-water mark: Stats = %d records, %v; want 3000", st.Records, err)
		}
		s.Close()
	}

	_, err = bolt.Open(filepath.Join(t.TempDir(), "missing.db"), &bolt.Options{Journal: journal.Options{ReadOnly: true}})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenBolt(missing, read-only) error = %v; want fs.ErrNotExist", err)
	}
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	return [32]byte(h.Sum(nil))
}

func TestBoltReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	s := mustOpen(t, path, nil)
	recs := fill(t, s, 8)
	ctx := context.Background()
	pend := benchRequest(uuid.New(), true)
	pres, err := s.Begin(ctx, pend)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	before := fileHash(t, path)
	info, _ := os.Stat(path)

	ro := mustOpen(t, path, &bolt.Options{Journal: journal.Options{ReadOnly: true}})
	settled := benchRequest(recs[0].Key, true)
	settled.Intent = recs[0].Intent
	if res, err := ro.Begin(ctx, settled); err != nil || res.Outcome != journal.Answered {
		t.Errorf("read-only Begin of a settled record = %v, %v; want Answered", res.Outcome, err)
	}
	writes := map[string]error{}
	_, writes["Begin(new)"] = ro.Begin(ctx, benchRequest(uuid.New(), true))
	_, writes["Begin(non-durable)"] = ro.Begin(ctx, benchRequest(uuid.New(), false))
	writes["StartAttempt"] = ro.StartAttempt(ctx, journal.AttemptRequest{Key: pend.Key, Token: pres.Token, ID: "a2"})
	_, writes["Complete"] = ro.Complete(ctx, journal.Completion{Key: pend.Key, Token: pres.Token, State: journal.StateSucceeded})
	_, writes["Resolve"] = ro.Resolve(ctx, pend.Key, journal.Resolution{State: journal.StateFailed})
	imp := recs[1]
	imp.Key = uuid.New()
	writes["Import"] = ro.Import(ctx, imp)
	_, writes["GC"] = ro.GC(ctx, journal.GCOptions{})
	for name, err := range writes {
		if !errors.Is(err, journal.ErrReadOnly) {
			t.Errorf("read-only %s error = %v; want ErrReadOnly", name, err)
		}
	}
	if _, err := ro.GC(ctx, journal.GCOptions{DryRun: true}); err != nil {
		t.Errorf("read-only GC(dry run) error: %v", err)
	}
	if st, err := ro.Stats(ctx); err != nil || st.Records != 9 {
		t.Errorf("read-only Stats() = %d records, %v; want 9", st.Records, err)
	}
	n := 0
	for _, err := range ro.List(ctx, journal.Filter{Tool: "charge_customer"}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 9 {
		t.Errorf("read-only List() = %d records; want 9", n)
	}
	// Two readers at once are fine.
	ro2 := mustOpen(t, path, &bolt.Options{Journal: journal.Options{ReadOnly: true}})
	ro2.Close()
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if fileHash(t, path) != before {
		t.Fatalf("read-only use changed the journal file")
	}
	if after, _ := os.Stat(path); !after.ModTime().Equal(info.ModTime()) {
		t.Fatalf("read-only use touched the journal file: mtime %v → %v", info.ModTime(), after.ModTime())
	}
}

// TestBoltCompact reports the file size of 5000 records (100,000 with
// AGENTONCE_LONG=1), and what Compact gives back after GC removed half of
// them.
func TestBoltCompact(t *testing.T) {
	n := 5000
	if os.Getenv("AGENTONCE_LONG") == "1" && !testing.Short() {
		n = 100_000 // the file sizes BENCHMARKS.md reports
	} else {
		t.Logf("AGENTONCE_LONG=1 runs it on 100,000 records; %d here", n)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "j.db")
	clk := &fakeNow{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := mustOpen(t, src, &bolt.Options{Journal: journal.Options{Now: clk.Now}})
	recs := bulk(t, s, n/2, clk.t, time.Hour)
	recs = append(recs, bulk(t, s, n/2, clk.t, 30*24*time.Hour)...)
	ns := s.Namespace()
	full := fileSize(t, src)
	fullUsed := usedBytes(t, s)
	clk.t = clk.t.Add(2 * time.Hour)
	removed, err := s.GC(context.Background(), journal.GCOptions{})
	if err != nil || removed.Removed != n/2 {
		t.Fatalf("GC() = %+v, %v; want %d removed", removed, err, n/2)
	}
	afterGC := fileSize(t, src)
	gcUsed := usedBytes(t, s)
	s.Close()

	var calls int
	var last [2]int64
	dst := filepath.Join(dir, "compact.db")
	err = bolt.Compact(context.Background(), src, dst, func(done, total int64) {
		calls++
		last = [2]int64{done, total}
	})
	if err != nil {
		t.Fatalf("Compact: %v", err)
	}
	compacted := fileSize(t, dst)
	t.Logf("%d records of %d B: file %d B (%.0f B/record, %d B used); after GC of half: %d B (%d B used); compacted: %d B (%.0f%%, %d B used; bbolt grows files in 16 MiB steps)",
		n, len(bolt.EncodeRecord(nil, &recs[0])), full, float64(full)/float64(n), fullUsed, afterGC, gcUsed,
		compacted, 100*float64(compacted)/float64(afterGC), hwm(t, dst))
	if last != [2]int64{int64(n / 2), int64(n / 2)} || calls == 0 {
		t.Errorf("progress: last call (%d, %d) after %d calls; want (%d, %d)", last[0], last[1], calls, n/2, n/2)
	}
	if compacted >= afterGC {
		t.Errorf("compacted file %d B; want less than %d B", compacted, afterGC)
	}
	c := mustOpen(t, dst, nil)
	defer c.Close()
	if c.Namespace() != ns {
		t.Fatalf("compacted namespace %s; want %s", c.Namespace(), ns)
	}
	for _, want := range recs[n/2:] {
		got, err := c.Get(context.Background(), want.Key)
		if err != nil {
			t.Fatalf("Get(%s) from the compacted journal: %v", want.Key, err)
		}
		sameRecord(t, "compacted", got, want)
	}
	if err := bolt.Compact(context.Background(), src, dst, nil); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Compact onto an existing file: %v; want fs.ErrExist", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dst2 := filepath.Join(dir, "cancelled.db")
	if err := bolt.Compact(ctx, src, dst2, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Compact with a cancelled context: %v; want context.Canceled", err)
	}
	if _, err := os.Stat(dst2); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed Compact left %s behind", dst2)
	}
}

// usedBytes is the size of the pages in use: the high-water mark less the
// free pages.
func usedBytes(t *testing.T, s *bolt.Store) int64 {
	t.Helper()
	st := bolt.BoltStats(s)
	return st
}

type fakeNow struct{ t time.Time }

func (f *fakeNow) Now() time.Time { return f.t }

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}
