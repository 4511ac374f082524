package bolt

// The pending log: the non-durable records' second home, so that they
// outlive the process that wrote them (a successor finding no record would
// begin the intent afresh and could deny an effect the killed attempt
// made). Every overlay write is also appended to <journal>-pending with
// one write(2), not fsynced: a kill cannot take it, an operating-system
// crash or power loss can. A writer's Open folds the log's records that
// are newer than the file's into the file, durably, before anything else,
// so the successor finds them pending under a lease ended at the open.
//
// The log holds the encoded record of every key in the overlay (live) and
// is rewritten from it when it has grown past twice their size plus
// pendingSlack; it is emptied when the overlay is. When the live records
// alone pass maxPendingLive, further writes are made durable instead, so
// the log, and what an open reads of it, stays bounded.
//
// Format: the 8-byte header pendingMagic, then frames of a big-endian
// uint32 length, the CRC-32C of the payload and the payload, the record's
// binary form (codec.Encode, which carries its own checksum).
// A frame cut short or whose CRC is wrong ends the log: a write the
// kernel had not finished when the system stopped. A frame whose CRC
// holds but whose record does not decode is damage, and fails the open.

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
	// pendingSlack is how far the log may grow past twice its live
	// records before it is rewritten.
	pendingSlack = 1 << 20
	// maxPendingLive bounds the live records' encoded size: past it a
	// non-durable write is made durable (pendingLog.put refuses it).
	maxPendingLive = 32 << 20
	// maxPendingFile is the largest pending log an open reads: the log
	// never grows past 2*maxPendingLive+pendingSlack and one frame.
	maxPendingFile = 2*maxPendingLive + pendingSlack + maxPendingFrame
	// maxPendingFrame bounds one frame's payload.
	maxPendingFrame = 16 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// pendingLog is the append-only file of the overlay's records. Its methods
// are called with the record's stripe locked, and take mu after it; mu is
// never held while taking a stripe's lock.
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

// framePool recycles frames once the log no longer needs them (drop, or a
// newer frame of the key): most keys' frames live from a write-ahead to
// its outcome, and each was an allocation. Frames past maxPooledFrame are
// left to the collector.
var framePool = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledFrame = 16 << 10

// recycle returns a frame that nothing refers to any more to framePool.
func recycle(fp *[]byte) {
	if fp != nil && cap(*fp) <= maxPooledFrame {
		framePool.Put(fp)
	}
}

// put appends r's frame and reports whether it did: false means the caller
// must make the write durable instead (the live records are at their
// bound, or the log cannot be written).
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

// append writes the frame *fp of key, which it keeps as key's live frame
// when it reports true. l.mu is held.
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
	if err := l.write(frame); err != nil {
		l.err = err
		return false
	}
	l.live[key] = fp
	recycle(prev)
	l.liveBytes += len(frame) - old
	if l.size > 2*int64(l.liveBytes)+pendingSlack {
		if err := l.rewrite(); err != nil {
			l.err = err
			// The frames already written stay valid; refusing further
			// puts makes every later write durable.
		}
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
		// Every frame is superseded: start over. A failed truncation
		// leaves frames that an open will find older than the file's.
		if err := l.f.Truncate(int64(len(pendingMagic))); err == nil {
			l.size = int64(len(pendingMagic))
		}
	}
}

// create makes a new log holding the header and frames, in place of any
// other, through a temporary file renamed over the log (no fsync: the log
// is for process crashes).
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
	if _, err := f.Write(buf); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("pending log %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, l.path); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("pending log: %w", err)
	}
	if l.f != nil {
		l.f.Close()
	}
	l.f, l.size = f, int64(len(buf))
	return nil
}

// rewrite replaces the log by one holding only the live frames.
func (l *pendingLog) rewrite() error {
	frames := make([][]byte, 0, len(l.live))
	for _, fp := range l.live {
		frames = append(frames, *fp)
	}
	return l.create(frames)
}

func (l *pendingLog) write(frame []byte) error {
	n, err := l.f.Write(frame)
	l.size += int64(n)
	if err != nil {
		return fmt.Errorf("pending log %s: %w", l.path, err)
	}
	return nil
}

// close closes the log and, when no frame is live (the overlay was
// flushed), removes it.
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
// Updated, then by attempts; on a tie b is kept (the file's record, read as
// b, wins over the log's).
func newerThan(a, b *journal.Record) bool {
	if !a.Updated.Equal(b.Updated) {
		return a.Updated.After(b.Updated)
	}
	return len(a.Attempts) > len(b.Attempts)
}

// recoverPending folds the pending log's records that are newer than the
// file's into the file, durably, then empties the log: the records of
// non-durable writes of a process that stopped. A writer's Open calls it
// before serving, after the clock has started. It returns how many
// records it restored.
func (s *Store) recoverPending() (int, error) {
	recs, err := readPendingLog(s.pendlog.path)
	if err != nil || len(recs) == 0 {
		if err == nil {
			err = s.removePendingLog()
		}
		return 0, err
	}
	n := 0
	err = s.writeTx(func(tx *bbolt.Tx) error {
		n = 0
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
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("journal %s: restoring the records of %s: %w", s.path, s.pendlog.path, err)
	}
	return n, s.removePendingLog()
}

// removePendingLog removes the pending log, once what it held is durable.
func (s *Store) removePendingLog() error {
	if err := os.Remove(s.pendlog.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("journal %s: %w", s.path, err)
	}
	return nil
}

// loadPending puts the pending log's records that are newer than the
// file's into the overlay of a read-only store, which cannot write them:
// what a reader of a crashed writer's journal is shown.
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
