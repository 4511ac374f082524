package bolt_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

// damagedFreelist is a journal of n records whose freelist pages (the one
// each meta page names) hold random bytes.
func damagedFreelist(t *testing.T, n int) string {
	t.Helper()
	good := filepath.Join(t.TempDir(), "good.db")
	s := mustOpen(t, good, nil)
	if n > 0 {
		bulk(t, s, n, time.Now(), time.Hour)
	}
	s.Close()
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	for _, meta := range []int{0, page} {
		p := int(bolt.MetaFreelist(b, meta))
		if p < 2 || (p+1)*page > len(b) {
			t.Fatalf("meta page at %d names freelist page %d of a %d-byte file", meta, p, len(b))
		}
		copy(b[p*page:(p+1)*page], randomBytes(page))
	}
	return writeFile(t, "freelist.db", b)
}

// A journal whose freelist page is damaged is refused as corrupt by every
// open for writing, the second in the same process included: bbolt reads
// the freelist inside its Open, and when it panicked there the file's
// mapping kept the lock, so the second open was told the journal was in
// use by another process. A read-only open does not read the freelist and
// still reads every record.
func TestBoltDamagedFreelist(t *testing.T) {
	for _, n := range []int{0, 3000} {
		path := damagedFreelist(t, n)
		for i := range 2 {
			s, err := bolt.Open(path, nil)
			if err == nil {
				s.Close()
				t.Fatalf("%d records, open %d: a journal with a damaged freelist opened for writing", n, i+1)
			}
			if !errors.Is(err, journal.ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "freelist") {
				t.Errorf("%d records, open %d: %v; want ErrCorrupt naming the file and its freelist", n, i+1, err)
			}
		}
		s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{ReadOnly: true}})
		if err != nil {
			t.Fatalf("%d records, read-only: %v", n, err)
		}
		st, err := s.ScanStats(context.Background())
		s.Close()
		if err != nil || st.Records != n {
			t.Errorf("%d records, read-only: ScanStats = %d records, %v; want %d", n, st.Records, err, n)
		}
	}
}

// When bbolt panics inside its Open (here on the damaged freelist, with
// the check that prevents it turned off), the file's lock is released:
// the next open gets the same answer, not ErrInUse.
func TestBoltPanicInOpenReleasesLock(t *testing.T) {
	bolt.SkipFileCheck(t)
	path := damagedFreelist(t, 10)
	for i := range 2 {
		s, err := bolt.Open(path, &bolt.Options{LockTimeout: 50 * time.Millisecond})
		if err == nil {
			s.Close()
			t.Fatalf("open %d: a journal with a damaged freelist opened for writing", i+1)
		}
		if !errors.Is(err, journal.ErrCorrupt) || errors.Is(err, journal.ErrInUse) {
			t.Errorf("open %d: %v; want ErrCorrupt", i+1, err)
		}
	}
}
