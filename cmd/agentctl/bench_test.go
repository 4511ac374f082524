package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/keyderive"
)

// Large journals for the ls and stats figures.
//
// Build a 1,000,000-record journal once, outside the normal test run:
//
//	AGENTCTL_BUILD_BIG=/tmp/big.db go test -run TestBuildBigJournal -timeout 2h ./cmd/agentctl
//
// then benchmark against it:
//
//	AGENTCTL_BENCH_JOURNAL=/tmp/big.db go test -run '^$' -bench . -benchtime 5x ./cmd/agentctl
//
// Without AGENTCTL_BENCH_JOURNAL the benchmarks build a 20,000-record
// journal in a temporary directory. The records come in sessions of
// bigSessionSize intents, so "ls --session" reads bigSessionSize records
// whatever the journal's size.

const bigSessionSize = 10

var bigTools = []string{"search", "charge", "refund", "email", "lookup", "book", "ship", "notify"}

// bigRecord is record i of a synthetic journal: session i/bigSessionSize,
// a tool and a state that vary with i, created one millisecond apart.
func bigRecord(ns uuid.UUID, base time.Time, i int) journal.Record {
	in := keyderive.Intent{
		Tenant:  "t" + strconv.Itoa(i%7),
		Session: "s-" + strconv.Itoa(i/bigSessionSize),
		Turn:    strconv.Itoa(i % bigSessionSize / 3),
		Tool:    bigTools[i%len(bigTools)],
	}
	input := []byte(`{"amount":"` + strconv.Itoa(i%10000) + `.00","currency":"USD","customer":` + strconv.Itoa(i) + `}`)
	created := base.Add(time.Duration(i) * time.Millisecond)
	r := journal.Record{
		Version: journal.SchemaVersion, Key: keyderive.Key(ns, in, input), Intent: in,
		Fingerprint: keyderive.FingerprintOf(input), Effect: journal.Effect(i % 4), Input: input,
		Attempts: []journal.Attempt{{ID: "a-" + strconv.Itoa(i), Start: created, End: created.Add(80 * time.Millisecond)}},
		Lease:    journal.Lease{Owner: "agent-" + strconv.Itoa(i%16), Token: 1, Expires: created.Add(80 * time.Millisecond)},
		Created:  created, Updated: created.Add(80 * time.Millisecond), Expires: created.Add(journal.DefaultTTL),
	}
	switch i % 20 {
	case 0:
		r.State, r.ErrorClass, r.ErrorMessage = journal.StateFailed, "terminal", "400 Bad Request"
	case 1:
		r.State, r.ErrorClass, r.ErrorMessage = journal.StateUnknown, "maybe-executed", "timeout"
	case 2:
		r.State, r.Lease.Expires = journal.StatePending, created.Add(30*time.Second)
		r.Attempts[0].End = time.Time{}
	default:
		r.State, r.Output = journal.StateSucceeded, []byte(`{"id":"ch_`+strconv.Itoa(i)+`","status":"ok"}`)
	}
	return r
}

// buildBig writes n synthetic records into a new bbolt journal at path,
// from many goroutines so that the store's group commit shares fsyncs.
func buildBig(tb testing.TB, path string, n int, progress io.Writer) {
	s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{Namespace: testNS}})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	base := time.Now().Add(-24 * time.Hour)
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	start := time.Now()
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := s.Import(context.Background(), bigRecord(testNS, base, i)); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				if progress != nil && (i+1)%100000 == 0 {
					fmt.Fprintf(progress, "%d records in %v\n", i+1, time.Since(start).Round(time.Second))
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		tb.Fatal(firstErr)
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
}

// TestBuildBigJournal builds the large journal for the benchmarks; it runs
// only when AGENTCTL_BUILD_BIG names the file to create.
func TestBuildBigJournal(t *testing.T) {
	path := os.Getenv("AGENTCTL_BUILD_BIG")
	if path == "" {
		t.Skip("set AGENTCTL_BUILD_BIG=FILE (and AGENTCTL_BUILD_N, default 1000000) to build a large journal")
	}
	n := 1_000_000
	if v := os.Getenv("AGENTCTL_BUILD_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatalf("%s exists; remove it first", path)
	}
	start := time.Now()
	buildBig(t, path, n, os.Stderr)
	fi, _ := os.Stat(path)
	t.Logf("built %d records in %v: %s", n, time.Since(start).Round(time.Second), humanBytes(fi.Size()))
}

var (
	benchOnce sync.Once
	benchPath string
	benchN    int
)

// benchJournal returns the journal to benchmark and its record count.
func benchJournal(b *testing.B) (string, int) {
	benchOnce.Do(func() {
		if p := os.Getenv("AGENTCTL_BENCH_JOURNAL"); p != "" {
			benchPath = p
			s, err := bolt.Open(p, &bolt.Options{Journal: journal.Options{ReadOnly: true}})
			if err != nil {
				b.Fatal(err)
			}
			st, err := s.Stats(context.Background())
			s.Close()
			if err != nil {
				b.Fatal(err)
			}
			benchN = st.Records
			return
		}
		dir, err := os.MkdirTemp("", "agentctl-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchPath, benchN = filepath.Join(dir, "journal.db"), 20000
		buildBig(b, benchPath, benchN, nil)
	})
	return benchPath, benchN
}

// benchRun runs one agentctl invocation per iteration with output
// discarded, as a pipe would see it (tab-separated).
func benchRun(b *testing.B, want int, args ...string) {
	b.ReportAllocs()
	e := &env{stdin: nil, stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" },
		now: time.Now, loc: time.UTC, user: func() string { return "bench" }}
	for b.Loop() {
		if code := run(context.Background(), e, args); code != want {
			b.Fatalf("agentctl %v = %d; want %d", args, code, want)
		}
	}
}

// BenchmarkLsSession: ls --session uses the session index (agentonce);
// the baseline lists the whole journal and filters by session itself.
func BenchmarkLsSession(b *testing.B) {
	path, n := benchJournal(b)
	session := "s-" + strconv.Itoa(n/bigSessionSize/2)
	b.Run("agentonce", func(b *testing.B) {
		benchRun(b, 0, "ls", "--journal", path, "--session", session, "--limit", "0")
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{ReadOnly: true}})
			if err != nil {
				b.Fatal(err)
			}
			found := 0
			for r, err := range s.List(context.Background(), journal.Filter{}) {
				if err != nil {
					b.Fatal(err)
				}
				if r.Intent.Session == session {
					found++
				}
			}
			s.Close()
			if found != bigSessionSize {
				b.Fatalf("found %d; want %d", found, bigSessionSize)
			}
		}
	})
}

// BenchmarkLs: the newest 100 (the default), and every record as
// tab-separated lines.
func BenchmarkLs(b *testing.B) {
	path, _ := benchJournal(b)
	b.Run("newest100/agentonce", func(b *testing.B) { benchRun(b, 0, "ls", "--journal", path) })
	b.Run("all/agentonce", func(b *testing.B) { benchRun(b, 0, "ls", "--journal", path, "--limit", "0") })
	b.Run("tool-state/agentonce", func(b *testing.B) {
		benchRun(b, 0, "ls", "--journal", path, "--tool", "charge", "--state", "unknown", "--limit", "0")
	})
}

// BenchmarkStats: agentctl stats (Store.Stats) against counting every
// record through List.
func BenchmarkStats(b *testing.B) {
	path, n := benchJournal(b)
	b.Run("agentonce", func(b *testing.B) { benchRun(b, 0, "stats", "--journal", path) })
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{ReadOnly: true}})
			if err != nil {
				b.Fatal(err)
			}
			byState := map[journal.State]int{}
			byTool := map[string]int{}
			total := 0
			for r, err := range s.List(context.Background(), journal.Filter{}) {
				if err != nil {
					b.Fatal(err)
				}
				byState[r.State]++
				byTool[r.Intent.Tool]++
				total++
			}
			s.Close()
			if total != n {
				b.Fatalf("counted %d; want %d", total, n)
			}
		}
	})
}

// BenchmarkOpenReadOnly is the floor under every command: opening the
// journal read-only and closing it (the bbolt store reads every record at
// open to build its in-memory indexes).
func BenchmarkOpenReadOnly(b *testing.B) {
	path, _ := benchJournal(b)
	b.ReportAllocs()
	for b.Loop() {
		s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{ReadOnly: true}})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkListSession separates the session query from the open: with
// the store open, listing one session through the index (the filter ls
// --session passes) against scanning every record for it.
func BenchmarkListSession(b *testing.B) {
	path, n := benchJournal(b)
	s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{ReadOnly: true}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	session := "s-" + strconv.Itoa(n/bigSessionSize/2)
	count := func(f journal.Filter) int {
		found := 0
		for r, err := range s.List(context.Background(), f) {
			if err != nil {
				b.Fatal(err)
			}
			if r.Intent.Session == session {
				found++
			}
		}
		return found
	}
	b.Run("agentonce", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if got := count(journal.Filter{Session: session}); got != bigSessionSize {
				b.Fatalf("found %d; want %d", got, bigSessionSize)
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if got := count(journal.Filter{}); got != bigSessionSize {
				b.Fatalf("found %d; want %d", got, bigSessionSize)
			}
		}
	})
}
