// The store's clock: a line drawn through a monotonic clock, kept in meta
// so that an open in the same boot carries on along it and a jump of the
// wall clock moves nothing. docs/journal.md, "Clocks", has the rules.

package bolt

import (
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"
)

var (
	// metaClock is the store's time line: the monotonic clock's epoch, a
	// reading of it and the store's time then (16, 8 and 8 bytes).
	metaClock = []byte("clock")
	// metaHighWater is the store's time at the last Close (8 bytes).
	metaHighWater = []byte("high-water")
)

// storeClock is the store's clock, set by Open and only read afterwards.
type storeClock struct {
	wall func() time.Time
	// mono is the monotonic clock; nil: wall alone is the clock.
	mono     func() (uuid.UUID, time.Duration)
	base     time.Time     // the store's time at baseMono
	baseMono time.Duration // a reading of mono
}

// now is the store's time.
func (c *storeClock) now() time.Time {
	if c.mono == nil {
		return c.wall()
	}
	_, m := c.mono()
	return c.base.Add(max(m-c.baseMono, 0))
}

// startClock draws the store's time line at open and returns the store's
// time then.
func (s *Store) startClock() (time.Time, error) {
	c := &s.clock
	if c.mono == nil {
		return c.wall(), nil
	}
	epoch, m := c.mono()
	var line []byte
	var high int64
	err := s.view(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get(metaClock); len(v) == 32 { // (a damaged page can make it gigabytes)
			line = bytes.Clone(v)
		}
		if v := meta.Get(metaHighWater); len(v) == 8 {
			high = int64(binary.BigEndian.Uint64(v))
		}
		if s.legacy {
			return nil
		}
		// The newest record's creation: a crash leaves no high-water mark.
		k := lastBelow(tx.Bucket(bucketIndex).Cursor(), pfxTime+1)
		if len(k) == 25 && k[0] == pfxTime {
			high = max(high, readTime(k[1:9]))
		}
		fresh, err := s.freshEntries(tx)
		for _, e := range fresh {
			high = max(high, e.created)
		}
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	var base int64
	onLine := false
	if len(line) == 32 && uuid.UUID(line[:16]) == epoch {
		if m0 := int64(binary.BigEndian.Uint64(line[16:24])); int64(m) >= m0 {
			base = int64(binary.BigEndian.Uint64(line[24:32])) + int64(m) - m0
			onLine = true
		}
	}
	if !onLine {
		// A new epoch (a reboot): the wall clock, but never below what
		// the journal already holds.
		base = max(c.wall().UnixNano(), high+1)
	}
	c.base, c.baseMono = time.Unix(0, base).UTC(), m
	if !onLine && !s.readOnly {
		// Written with the first write (writeTx): an open writes nothing.
		v := make([]byte, 0, 32)
		v = append(v, epoch[:]...)
		v = binary.BigEndian.AppendUint64(v, uint64(m))
		v = binary.BigEndian.AppendUint64(v, uint64(base))
		s.lineDue.Store(&v)
	}
	return c.base, nil
}

// highWater records the store's time as the journal's high-water mark in
// tx: Close's last write, on a monotonic clock.
func (s *Store) highWater(tx *bbolt.Tx) error {
	return tx.Bucket(bucketMeta).Put(metaHighWater, binary.BigEndian.AppendUint64(nil, uint64(s.clock.now().UnixNano())))
}

// hostClock is the host's monotonic clock, read once per process: the
// boot's id and the time since boot where the system says them, else an
// epoch of the process's own; it then moves with Go's monotonic clock.
var hostClock = sync.OnceValue(newHostMono)

// newHostMono reads the boot clock, then Go's: a reading is never ahead of
// the boot clock, so a later process reads a later boot time.
func newHostMono() *hostMono {
	h := &hostMono{}
	if id, up, ok := bootClock(); ok {
		h.epoch, h.base = id, up
	} else {
		h.epoch = uuid.New()
	}
	h.start = time.Now()
	return h
}

type hostMono struct {
	epoch uuid.UUID
	base  time.Duration // the time since the epoch at start
	start time.Time
}

// hostMonotonic is journal.Options.Monotonic's default.
func hostMonotonic() (uuid.UUID, time.Duration) {
	h := hostClock()
	return h.epoch, h.base + time.Since(h.start)
}

// bootClock reads Linux's boot id and uptime; ok is false elsewhere.
func bootClock() (id uuid.UUID, up time.Duration, ok bool) {
	read := func(name string) string {
		f, err := os.Open(name)
		if err != nil {
			return ""
		}
		defer f.Close()
		b := make([]byte, 128) // both files are one short line
		n, _ := f.Read(b)
		return strings.TrimSpace(string(b[:n]))
	}
	id, err := uuid.Parse(read("/proc/sys/kernel/random/boot_id"))
	if err != nil {
		return uuid.Nil, 0, false
	}
	if up, ok := bootTime(); ok {
		return id, up, true
	}
	secs, _, _ := strings.Cut(read("/proc/uptime"), " ")
	f, err := strconv.ParseFloat(secs, 64)
	if err != nil || f < 0 {
		return uuid.Nil, 0, false
	}
	// Rounded up by the file's resolution (10 ms), where CLOCK_BOOTTIME
	// cannot be read.
	return id, time.Duration(f*float64(time.Second)) + 10*time.Millisecond, true
}
