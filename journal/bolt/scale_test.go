package bolt_test

// Benchmarks and checks at a million records and more. The journals are
// built once and kept under /tmp/agentonce-scale (building one costs
// minutes on a small machine): delete the directory to rebuild them.

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/keyderive"
)

const scaleDir = "/tmp/agentonce-scale"

// scaleNow is the clock of the scale journals: every record was created in
// the day before it, and the expired ones expired in the hour before.
var scaleNow = time.Date(2031, 6, 1, 0, 0, 0, 0, time.UTC)

// scaleRecord is record i of n: spread over 1000-record sessions, three
// tools, one in 50 unknown, one in 100 suppressed; expired records are
// spread evenly (every n/expired-th), so that GC removes them from all over
// the records bucket, as it does in a journal of random keys. Keys ascend
// with i so that the build appends. With pending, one record in twenty is
// pending with a lease that ended long ago, as crashed owners leave them
// (the shape of cmd/agentctl's TestBuildBigJournal).
func scaleRecord(i, n, expired int, pending bool, rng *rand.Rand) journal.Record {
	var key uuid.UUID
	binary.BigEndian.PutUint64(key[:8], uint64(i)*(^uint64(0)/uint64(n)))
	binary.BigEndian.PutUint64(key[8:], rng.Uint64())
	created := scaleNow.Add(-24 * time.Hour).Add(time.Duration(i) * (24 * time.Hour / time.Duration(n)))
	r := journal.Record{
		Key:         key,
		Intent:      keyderive.Intent{Tenant: "acme", Session: fmt.Sprintf("sess-%d", i/1000), Turn: strconv.Itoa(i % 7), Tool: []string{"charge_customer", "send_email", "create_ticket"}[i%3]},
		Fingerprint: benchFP, Input: benchInput,
		State: journal.StateSucceeded, Output: benchOutput,
		Attempts: []journal.Attempt{{ID: "att-0001", Start: created, End: created}},
		Lease:    journal.Lease{Owner: "host-1/pid-4242", Token: 1, Expires: created},
		Created:  created, Updated: created, Expires: created.Add(journal.DefaultTTL),
	}
	switch {
	case i%50 == 7:
		r.State, r.Output, r.ErrorClass = journal.StateUnknown, nil, "timeout"
	case i%100 == 3:
		r.State, r.Output, r.ErrorClass = journal.StateSuppressed, nil, "conflict"
	case pending && i%20 == 2:
		r.State, r.Output = journal.StatePending, nil
		r.Attempts[0].End = time.Time{}
		r.Lease.Expires = created.Add(30 * time.Second)
	}
	if expired > 0 && i%(n/expired) == 0 {
		r.Expires = scaleNow.Add(-time.Hour)
	}
	return r
}

// scaleJournal returns the path of a journal of n records (the first
// expired of them expired at scaleNow), building it if it is not cached.
func scaleJournal(tb testing.TB, n, expired int) string {
	tb.Helper()
	return buildScaleJournal(tb, filepath.Join(scaleDir, fmt.Sprintf("j-%d-%d-spread.db", n, expired)), n, expired, false)
}

// scalePendingJournal returns the path of a journal of n records, one in
// twenty of them pending (see scaleRecord), building it if it is not
// cached.
func scalePendingJournal(tb testing.TB, n int) string {
	tb.Helper()
	return buildScaleJournal(tb, filepath.Join(scaleDir, fmt.Sprintf("j-%d-pending.db", n)), n, 0, true)
}

func buildScaleJournal(tb testing.TB, path string, n, expired int, pending bool) string {
	tb.Helper()
	if _, err := os.Stat(path + ".done"); err == nil {
		return path
	}
	if err := os.MkdirAll(scaleDir, 0o755); err != nil {
		tb.Fatal(err)
	}
	os.Remove(path)
	t0 := time.Now()
	s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{Now: func() time.Time { return scaleNow }}})
	if err != nil {
		tb.Fatal(err)
	}
	bolt.SetNoSync(s, true)
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	chunk := make([]journal.Record, 0, 10000)
	for i := 0; i < n; i += cap(chunk) {
		chunk = chunk[:0]
		for j := i; j < min(n, i+cap(chunk)); j++ {
			chunk = append(chunk, scaleRecord(j, n, expired, pending, rng))
		}
		if err := bolt.BulkPut(s, chunk); err != nil {
			tb.Fatal(err)
		}
	}
	bolt.SetNoSync(s, false)
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path+".done", nil, 0o644); err != nil {
		tb.Fatal(err)
	}
	fi, _ := os.Stat(path)
	tb.Logf("built %s: %d records, %d MiB, in %v", path, n, fi.Size()>>20, time.Since(t0).Round(time.Second))
	return path
}

// scaleSizes are the journal sizes the scale benchmarks use:
// $AGENTONCE_SCALE (comma-separated), default 1000000.
func scaleSizes(tb testing.TB) []int {
	env := os.Getenv("AGENTONCE_SCALE")
	if env == "" {
		tb.Skip("set AGENTONCE_SCALE=1000000[,3000000] to run the scale benchmarks (they build journals under " + scaleDir + ")")
	}
	var out []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			tb.Fatalf("AGENTONCE_SCALE: %v", err)
		}
		out = append(out, n)
	}
	return out
}

// BenchmarkOpen opens a journal for writing and closes it, on the host's
// clock (as an agent does): an empty one, the scale journals, and the
// scale journals of which one record in twenty is pending (rss-MiB: the
// resident set the open adds, the file's pages it faulted in).
func BenchmarkOpen(b *testing.B) {
	sizes := append([]int{0}, scaleSizes(b)...)
	for _, n := range sizes {
		for _, pending := range []bool{false, true} {
			if pending && n == 0 {
				continue
			}
			name := fmt.Sprintf("records=%d", n)
			if pending {
				name += "/pending=5%"
			}
			b.Run(name, func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "empty.db")
				switch {
				case pending:
					path = scalePendingJournal(b, n)
				case n > 0:
					path = scaleJournal(b, n, 0)
				default:
					s := mustOpen(b, path, nil)
					s.Close()
				}
				var rss int64
				for b.Loop() {
					before := residentKiB(b)
					s := mustOpen(b, path, nil)
					rss += residentKiB(b) - before
					if err := s.Close(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(rss)/1024/float64(b.N), "rss-MiB")
			})
		}
	}
}

// residentKiB is the process's resident set now (/proc/self/statm).
func residentKiB(tb testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		tb.Skip("no /proc/self/statm")
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		tb.Fatal(err)
	}
	return pages * int64(os.Getpagesize()) / 1024
}

func mustOpenB(b *testing.B, path string) *bolt.Store {
	s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{Now: func() time.Time { return scaleNow }}})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkStats reads Stats of the scale journals from their counters,
// and of the GC benchmark's journal, whose 100 000 expired records Stats
// counts by walking the expiry index.
func BenchmarkStats(b *testing.B) {
	type journalSize struct{ n, expired int }
	sizes := []journalSize{{200_000, 100_000}}
	for _, n := range scaleSizes(b) {
		sizes = append(sizes, journalSize{n, 0})
	}
	for _, js := range sizes {
		n := js.n
		b.Run(fmt.Sprintf("records=%d/expired=%d", n, js.expired), func(b *testing.B) {
			s := mustOpenB(b, scaleJournal(b, n, js.expired))
			defer s.Close()
			for b.Loop() {
				st, err := s.Stats(context.Background())
				if err != nil || st.Records != n {
					b.Fatalf("Stats = %d records, %v; want %d", st.Records, err, n)
				}
			}
		})
	}
}

// BenchmarkPairedLarge is BenchmarkPaired's Keyed call on a copy of the
// scale journal (its clock continuing from the journal's newest record),
// against a raw bbolt commit into a bbolt file of as many values of the
// same size (rawJournal).
func BenchmarkPairedLarge(b *testing.B) {
	for _, n := range scaleSizes(b) {
		for _, noSync := range []bool{false, true} {
			name := fmt.Sprintf("records=%d", n)
			if noSync {
				name += "/nosync" // both without fsync: what is CPU
			}
			b.Run(name, func(b *testing.B) { pairedLarge(b, n, noSync) })
		}
	}
}

// pairedLarge is one BenchmarkPairedLarge: a copy of the scale journal of
// n records against a bare bbolt file of as many values, with or without
// fsync on both.
func pairedLarge(b *testing.B, n int, noSync bool) {
	src := scaleJournal(b, n, 0)
	path := filepath.Join(b.TempDir(), "j.db")
	copyFile(b, src, path)
	start := time.Now()
	s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{Now: func() time.Time { return scaleNow.Add(time.Since(start)) }}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rawPath := filepath.Join(b.TempDir(), "raw.db")
	copyFile(b, rawJournal(b, n), rawPath)
	db, err := bbolt.Open(rawPath, 0o600, &bbolt.Options{FreelistType: bbolt.FreelistMapType})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if noSync {
		bolt.SetNoSync(s, true)
		db.NoSync = true
	}
	pairedWrites(b, s, db, false)
}

// rawJournal returns the path of a bare bbolt file with n values of the
// size of a scale record, under ascending keys in bucket "r", building it
// if it is not cached.
func rawJournal(tb testing.TB, n int) string {
	tb.Helper()
	path := filepath.Join(scaleDir, fmt.Sprintf("raw-%d.db", n))
	if _, err := os.Stat(path + ".done"); err == nil {
		return path
	}
	os.Remove(path)
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{FreelistType: bbolt.FreelistMapType, NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	val := bolt.EncodeRecord(nil, &journal.Record{})
	if r := scaleRecord(0, n, 0, false, rng); true {
		val = bolt.EncodeRecord(nil, &r)
	}
	for i := 0; i < n; i += 10000 {
		err := db.Update(func(tx *bbolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("r"))
			if err != nil {
				return err
			}
			for j := i; j < min(n, i+10000); j++ {
				var key uuid.UUID
				binary.BigEndian.PutUint64(key[:8], uint64(j)*(^uint64(0)/uint64(n)))
				binary.BigEndian.PutUint64(key[8:], rng.Uint64())
				if err := bk.Put(key[:], val); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	if err := db.Sync(); err != nil {
		tb.Fatal(err)
	}
	db.Close()
	if err := os.WriteFile(path+".done", nil, 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

func copyFile(tb testing.TB, src, dst string) {
	tb.Helper()
	in, err := os.Open(src)
	if err != nil {
		tb.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
}

const rssEnv = "AGENTONCE_JOURNAL_RSS_CHILD"

// TestScaleRSSChild opens the journal at $AGENTONCE_JOURNAL_RSS_CHILD for
// writing (or, when it is "none", nothing), makes one new Keyed call, one
// replay and one Stats, and prints its peak resident set (VmHWM).
func TestScaleRSSChild(t *testing.T) {
	path := os.Getenv(rssEnv)
	if path == "" {
		t.Skip("helper process for TestScaleOpenRSS")
	}
	if path != "none" {
		t0 := time.Now()
		s, err := bolt.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		open := time.Since(t0)
		ctx := context.Background()
		req := benchRequest(uuid.New(), false)
		res, err := s.Begin(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded, Output: benchOutput}); err != nil {
			t.Fatal(err)
		}
		if res, err := s.Begin(ctx, req); err != nil || res.Outcome != journal.Answered {
			t.Fatalf("replay = %v, %v", res.Outcome, err)
		}
		if _, err := s.Stats(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		fmt.Println("open", open.Microseconds())
	}
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			fmt.Println("hwm", strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		}
	}
}

// rssChild runs TestScaleRSSChild on path and returns its peak RSS in KiB
// and the open's duration.
func rssChild(t *testing.T, path string) (kib int64, open time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestScaleRSSChild$")
	cmd.Env = append(os.Environ(), rssEnv+"="+path)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child on %s: %v: %s", path, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "hwm "); ok {
			kib, _ = strconv.ParseInt(v, 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "open "); ok {
			us, _ := strconv.ParseInt(v, 10, 64)
			open = time.Duration(us) * time.Microsecond
		}
	}
	if kib == 0 {
		t.Fatalf("child on %s said %q", path, out)
	}
	return kib, open
}

// A process that opens a journal of a million records for writing, makes
// a call, a replay and a Stats, peaks under 64 MiB, the test binary's own
// footprint included.
func TestScaleOpenRSS(t *testing.T) {
	sizes := scaleSizes(t)
	bare, _ := rssChild(t, "none")
	empty := filepath.Join(t.TempDir(), "empty.db")
	s := mustOpen(t, empty, nil)
	s.Close()
	e, eo := rssChild(t, empty)
	t.Logf("peak RSS: test binary alone %d KiB; empty journal %d KiB (open %v)", bare, e, eo)
	for _, n := range sizes {
		for _, pending := range []bool{false, true} {
			path, shape := scaleJournal(t, n, 0), ""
			if pending {
				path, shape = scalePendingJournal(t, n), ", one in twenty pending"
			}
			cp := filepath.Join(t.TempDir(), fmt.Sprintf("j-%d.db", n))
			copyFile(t, path, cp)
			// Twice: the first writer's open of a file is not special.
			for range 2 {
				kib, open := rssChild(t, cp)
				t.Logf("peak RSS: %d records%s %d KiB (open %v)", n, shape, kib, open)
				if kib > 64<<10 {
					t.Errorf("peak RSS with %d records%s = %d KiB; want under 64 MiB", n, shape, kib)
				}
			}
		}
	}
}

// BenchmarkGCWhileCalling makes Keyed calls, one at a time, while a
// background loop removes 100 000 expired records with GCBatch, and
// reports their mean latency against that of the same calls before and
// after the GC (x: during / outside).
func BenchmarkGCWhileCalling(b *testing.B) {
	scaleSizes(b)
	const expired = 100_000
	src := scaleJournal(b, 2*expired, expired)
	wantRemoved := 0 // unknown records never expire
	for i := range 2 * expired {
		if r := scaleRecord(i, 2*expired, expired, false, rand.New(rand.NewPCG(1, 1))); journal.Expired(&r, scaleNow) {
			wantRemoved++
		}
	}
	for _, pc := range []struct {
		batch int
		pause bool
	}{{64, false}, {bolt.DefaultGCBatch, false}, {64, true}, {bolt.DefaultGCBatch, true}} {
		batch := pc.batch
		b.Run(fmt.Sprintf("batch=%d/paced=%v", batch, pc.pause), func(b *testing.B) {
			var during, outside time.Duration
			var nDuring, nOutside int
			for b.Loop() {
				b.StopTimer()
				path := filepath.Join(b.TempDir(), "j.db")
				copyFile(b, src, path)
				s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{Now: func() time.Time { return scaleNow }}})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				call := func() time.Duration {
					t0 := time.Now()
					beginComplete(b, s, false)
					return time.Since(t0)
				}
				for range 200 {
					outside += call()
					nOutside++
				}
				var wg sync.WaitGroup
				done := make(chan struct{})
				removed := 0
				wg.Go(func() {
					defer close(done)
					for {
						t0 := time.Now()
						n, err := s.GCBatch(context.Background(), batch)
						if err != nil {
							b.Error(err)
							return
						}
						if removed += n; n == 0 {
							return
						}
						if pc.pause { // leave the writer free as long as the batch held it
							time.Sleep(time.Since(t0))
						}
					}
				})
			calls:
				for {
					select {
					case <-done:
						break calls
					default:
						during += call()
						nDuring++
					}
				}
				wg.Wait()
				if removed != wantRemoved {
					b.Fatalf("GCBatch removed %d; want %d", removed, wantRemoved)
				}
				for range 200 {
					outside += call()
					nOutside++
				}
				s.Close()
			}
			md, mo := during/time.Duration(nDuring), outside/time.Duration(nOutside)
			b.ReportMetric(float64(md)/float64(mo), "x")
			b.ReportMetric(float64(md.Microseconds()), "µs-during")
			b.ReportMetric(float64(mo.Microseconds()), "µs-outside")
			b.ReportMetric(float64(nDuring)/float64(b.N), "calls-during-gc")
		})
	}
}

// TestScaleMigrate times the migration of a large layout-1 journal, named
// by $AGENTONCE_SCALE_V1 (build one with the code of commit 97f14ae), on a
// copy, and checks its counters against a recount. The peak RSS of the
// migrating process is logged.
func TestScaleMigrate(t *testing.T) {
	src := os.Getenv("AGENTONCE_SCALE_V1")
	if src == "" {
		t.Skip("set AGENTONCE_SCALE_V1 to a layout-1 journal to time its migration")
	}
	path := filepath.Join(t.TempDir(), "v1.db")
	copyFile(t, src, path)
	t0 := time.Now()
	s := mustOpen(t, path, &bolt.Options{Journal: journal.Options{Now: func() time.Time { return scaleNow }}})
	took := time.Since(t0)
	defer s.Close()
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	scan, err := s.ScanStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(st) != fmt.Sprint(scan) {
		t.Errorf("after migration: Stats = %+v; ScanStats = %+v", st, scan)
	}
	t.Logf("migrated %d records in %v; peak RSS %d KiB", st.Records, took.Round(time.Millisecond), selfHWM(t))
}

// selfHWM is this process's peak resident set in KiB.
func selfHWM(t *testing.T) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkList lists one session (1 000 records) and the newest 100
// records of the scale journals.
func BenchmarkList(b *testing.B) {
	for _, n := range scaleSizes(b) {
		s := mustOpenB(b, scaleJournal(b, n, 0))
		for _, f := range []journal.Filter{{Session: fmt.Sprintf("sess-%d", n/2000)}, {Limit: 100}} {
			want := 1000
			name := "session"
			if f.Limit > 0 {
				want, name = f.Limit, "newest-100"
			}
			b.Run(fmt.Sprintf("records=%d/%s", n, name), func(b *testing.B) {
				for b.Loop() {
					got := 0
					for _, err := range s.List(context.Background(), f) {
						if err != nil {
							b.Fatal(err)
						}
						got++
					}
					if got != want {
						b.Fatalf("List(%+v) = %d records; want %d", f, got, want)
					}
				}
			})
		}
		s.Close()
	}
}
