package bolt

// The pending log, <journal>-pending: every overlay write is also appended
// with one write(2), not fsynced, so that a kill cannot lose it (a power
// loss can); a writer's Open folds its records newer than the file's into
// the file, durably (docs/journal.md, Caveats).
//
// The log holds the frame of every key in the overlay (live); it is
// rewritten when it has grown past twice their size plus pendingSlack, and
// emptied when the overlay is. Past maxPendingLive, writes are made
// durable instead, so the log stays bounded.
//
// Format: the header pendingMagic, then frames of a big-endian uint32
// length, the CRC-32C of the payload, and the payload (codec.Encode). A
// frame cut short or whose CRC is wrong ends the log (a write the kernel
// had not finished); one whose record does not decode fails the open.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sync"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/codec"
	"github.com/agentonce/agentonce/journal/internal/machine"
)

const (
	// pendingSuffix names the pending log beside the journal's file.
	pendingSuffix = "-pending"
	// pendingMagic begins every pending log.
	pendingMagic = "AOPEND1\n"
	// pendingSlack is how far the log grows past twice its live records.
	pendingSlack = 1 << 20
	// maxPendingLive bounds the live records' size: past it, put refuses.
	maxPendingLive = 32 << 20
	// maxPendingFile is the largest pending log an open reads.
	maxPendingFile = 2*maxPendingLive + pendingSlack + maxPendingFrame
	// maxPendingFrame bounds one frame's payload.
	maxPendingFrame = 16 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// pendingLog is the append-only file of the overlay's records. Its mu is
// taken after a stripe's lock, never before.
type pendingLog struct {
	path string

	mu        sync.Mutex
	f         *os.File // nil until the first put, and after a failed write
	size      int64
	live      map[uuid.UUID]*[]byte // each overlay key's latest frame (from framePool)
	liveBytes int
	err       error // the first write error: the log is then not trusted, and puts refuse
}

func newPendingLog(journalPath string) *pendingLog {
	return &pendingLog{path: journalPath + pendingSuffix, live: map[uuid.UUID]*[]byte{}}
}

// framePool recycles frames the log no longer needs (drop, or a newer
// frame of the key), up to maxPooledFrame bytes each.
var framePool = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledFrame = 16 << 10

// recycle returns a frame nothing refers to to framePool.
func recycle(fp *[]byte) {
	if fp != nil && cap(*fp) <= maxPooledFrame {
		framePool.Put(fp)
	}
}

// put appends r's frame and reports whether it did: false means the caller
// must make the write durable instead.
func (l *pendingLog) put(r *journal.Record) bool {
	fp := framePool.Get().(*[]byte)
	buf := *fp
	if cap(buf) < 8+1024 {
		buf = make([]byte, 0, 8+1024) // one allocation for most records
	}
	frame := codec.Encode(buf[:8], r)
	*fp = frame
	binary.BigEndian.PutUint32(frame[0:4], uint32(len(frame)-8))
	binary.BigEndian.PutUint32(frame[4:8], crc32.Checksum(frame[8:], crcTable))
	if len(frame)-8 > maxPendingFrame {
		recycle(fp)
		return false
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	ok := l.append(r.Key, fp)
	if !ok {
		recycle(fp)
	}
	return ok
}

// append writes key's frame *fp, kept as its live frame when it reports
// true. l.mu is held.
func (l *pendingLog) append(key uuid.UUID, fp *[]byte) bool {
	frame := *fp
	if l.err != nil {
		return false
	}
	prev := l.live[key]
	old := 0
	if prev != nil {
		old = len(*prev)
	}
	if l.liveBytes-old+len(frame) > maxPendingLive {
		return false
	}
	if l.f == nil {
		if err := l.create(nil); err != nil {
			l.err = err
			return false
		}
	}
	n, err := l.f.Write(frame)
	l.size += int64(n)
	if err != nil {
		l.err = fmt.Errorf("pending log %s: %w", l.path, err)
		return false
	}
	l.live[key] = fp
	recycle(prev)
	l.liveBytes += len(frame) - old
	if l.size > 2*int64(l.liveBytes)+pendingSlack { // rewrite the live frames
		frames := make([][]byte, 0, len(l.live))
		for _, fp := range l.live {
			frames = append(frames, *fp)
		}
		// On error the frames written stay valid; later writes are durable.
		l.err = l.create(frames)
	}
	return true
}

// drop forgets key's frame, once a durable write has superseded it, and
// empties the log when no frame is live.
func (l *pendingLog) drop(key uuid.UUID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fp, ok := l.live[key]
	if !ok {
		return
	}
	delete(l.live, key)
	l.liveBytes -= len(*fp)
	recycle(fp)
	if len(l.live) == 0 && l.f != nil && l.size > int64(len(pendingMagic)) {
		// Every frame is superseded. A failed truncation leaves frames an
		// open finds older than the file's.
		if err := l.f.Truncate(int64(len(pendingMagic))); err == nil {
			l.size = int64(len(pendingMagic))
		}
	}
}

// create replaces the log by one holding the header and frames, through a
// temporary file renamed over it (no fsync: the log is for process crashes).
func (l *pendingLog) create(frames [][]byte) error {
	tmp := l.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("pending log: %w", err)
	}
	buf := append(make([]byte, 0, 4096), pendingMagic...)
	for _, fr := range frames {
		buf = append(buf, fr...)
	}
	_, err = f.Write(buf)
	if err == nil {
		err = os.Rename(tmp, l.path)
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("pending log %s: %w", tmp, err)
	}
	if l.f != nil {
		l.f.Close()
	}
	l.f, l.size = f, int64(len(buf))
	return nil
}

// close closes the log and, when no frame is live, removes it.
func (l *pendingLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
	if len(l.live) > 0 {
		return nil
	}
	if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("pending log: %w", err)
	}
	return nil
}

// readPendingLog returns the newest record of each key in the pending log
// at path, in key order; none when there is no log.
func readPendingLog(path string) ([]*journal.Record, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pending log: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPendingFile+1))
	if err != nil {
		return nil, fmt.Errorf("pending log %s: %w", path, err)
	}
	if len(b) > maxPendingFile {
		return nil, fmt.Errorf("pending log %s: %w: larger than %d bytes, which this store never writes", path, journal.ErrCorrupt, maxPendingFile)
	}
	if len(b) == 0 {
		return nil, nil // created, its header not yet written
	}
	if !bytes.HasPrefix(b, []byte(pendingMagic)) {
		if len(b) < len(pendingMagic) && bytes.HasPrefix([]byte(pendingMagic), b) {
			return nil, nil // its header cut short
		}
		return nil, fmt.Errorf("pending log %s: %w: not a pending log (bad header)", path, journal.ErrCorrupt)
	}
	newest := map[uuid.UUID]*journal.Record{}
	for rest := b[len(pendingMagic):]; len(rest) >= 8; {
		n := int(binary.BigEndian.Uint32(rest[0:4]))
		if n > maxPendingFrame || n > len(rest)-8 {
			break // cut short by a crash
		}
		payload := rest[8 : 8+n]
		if crc32.Checksum(payload, crcTable) != binary.BigEndian.Uint32(rest[4:8]) {
			break // a write the system did not finish
		}
		rest = rest[8+n:]
		r, err := codec.Decode(payload)
		if err != nil {
			return nil, fmt.Errorf("pending log %s: %w", path, err)
		}
		if cur := newest[r.Key]; cur == nil || !newerThan(cur, &r) {
			newest[r.Key] = &r
		}
	}
	return slices.SortedFunc(maps.Values(newest), func(a, b *journal.Record) int { return machine.CompareKeys(a.Key, b.Key) }), nil
}

// newerThan reports whether a is a later write of its key than b: by
// Updated, then by attempts; a tie keeps b.
func newerThan(a, b *journal.Record) bool {
	if !a.Updated.Equal(b.Updated) {
		return a.Updated.After(b.Updated)
	}
	return len(a.Attempts) > len(b.Attempts)
}

// recoverPending folds the pending log's records that are newer than the
// file's into the file, durably, then removes the log. A writer's Open
// calls it after the clock has started.
func (s *Store) recoverPending() error {
	recs, err := readPendingLog(s.pendlog.path)
	if err == nil && len(recs) > 0 {
		err = s.writeTx(func(tx *bbolt.Tx) error {
			for _, r := range recs {
				var cur journal.Record
				found, err := s.readIn(tx.Bucket(bucketRecords), r.Key, &cur)
				if err != nil {
					return err
				}
				if found && !newerThan(r, &cur) {
					continue
				}
				if err := s.indexPut(tx, r, codec.Encode(nil, r), false); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("journal %s: restoring the records of %s: %w", s.path, s.pendlog.path, err)
		}
	}
	if err != nil {
		return err
	}
	if err := os.Remove(s.pendlog.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("journal %s: %w", s.path, err)
	}
	return nil
}

// loadPending puts the pending log's records that are newer than the
// file's into a read-only store's overlay.
func (s *Store) loadPending() error {
	recs, err := readPendingLog(s.pendlog.path)
	if err != nil {
		return err
	}
	for _, r := range recs {
		var cur journal.Record
		found, err := s.readFile(r.Key, &cur)
		if err != nil {
			return err
		}
		if found && !newerThan(r, &cur) {
			continue
		}
		st := s.stripe(r.Key)
		if st.overlay == nil {
			st.overlay = map[uuid.UUID]overlaid{}
		}
		st.overlay[r.Key] = overlaid{rec: r}
	}
	return nil
}
