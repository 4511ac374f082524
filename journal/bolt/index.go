// The indexes of a bbolt journal, written in the record's transaction.
// One bucket, "index", holds them all as composite keys behind a one-byte
// prefix, values empty unless said (docs/journal.md, "The bbolt file"):
//
//	'd' created key             every record: List, Stats.Oldest/Newest
//	'e' ^expires key            records that expire, latest first: GC and
//	                            Stats.Expired walk it from its end to now
//	'g' tenant session tool key suppressed records: the guard's lookup
//	's' session-hash created key  every record: List of one session
//	'u' state expires key → created  unknown and pending records:
//	                            Stats.OverdueUnknown, GC, List by state
//
// "counts" holds 't' tool → six uvarints: the tool's records in each state
// and their attempts, inline in the page of bucket headers for the first
// twenty or so tools, so counting costs no page.
//
// A new record's keys wait in "fresh" (key → state, creation time, expiry,
// session hash), inline too, until freshMax of them move into the index in
// one go, so that a new record's commit writes no index page. Every query
// also reads the fresh entries. Invariant: a record is either in the
// index, with the entries its current version gives, or its key is in
// "fresh" and it has no entry at all.
//
// Times are Unix nanoseconds, big-endian with the sign bit flipped; strings
// are uvarint-length-prefixed. An entry is derived from its record alone
// (ixEntry), so a write changes only the difference between the entries
// of the record it replaces and of the new one.

package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/codec"
	"github.com/agentonce/agentonce/journal/internal/machine"
)

var (
	bucketMeta    = []byte("meta")
	bucketRecords = []byte("records")
	bucketIndex   = []byte("index")
	bucketCounts  = []byte("counts")
	bucketFresh   = []byte("fresh")

	metaVersion   = []byte("version")
	metaNamespace = []byte("namespace")
	// metaNamespaceSum is the namespace's CRC-32C (nsSum): damaged, the
	// namespace would give every intent a new key.
	metaNamespaceSum = []byte("namespace-sum")
	// metaMigrating is present while a layout-1 journal's indexes are being
	// built: the last record key indexed (empty: none yet).
	metaMigrating = []byte("migrating")
)

// Index key prefixes; see the top of this file.
const (
	pfxTime    = 'd' // right before 'e' (lastBelow)
	pfxExpiry  = 'e'
	pfxGuard   = 'g'
	pfxSession = 's'
	pfxOpen    = 'u'
)

// toolCounts are one tool's counters: its records by state (index
// State-1, StatePending to StateUnknown) and, last, their attempts.
type toolCounts [6]int64

// countKey is the counts bucket's key of tool's counters, in buf.
func countKey(buf []byte, tool string) []byte { return append(append(buf[:0], 't'), tool...) }

func (c *toolCounts) encode(b []byte) []byte {
	for _, n := range c {
		b = binary.AppendUvarint(b, uint64(n))
	}
	return b
}

func (c *toolCounts) decode(v []byte) error {
	for i := range c {
		n, w := binary.Uvarint(v)
		if w <= 0 {
			return fmt.Errorf("%w: counter value %x", journal.ErrCorrupt, clip(v))
		}
		c[i], v = int64(n), v[w:]
	}
	if len(v) != 0 {
		return fmt.Errorf("%w: counter value of %d extra bytes", journal.ErrCorrupt, len(v))
	}
	return nil
}

// add counts e (d: 1) or takes it away (d: -1).
func (c *toolCounts) add(e *ixEntry, d int64) {
	if e.state >= journal.StatePending && e.state <= journal.StateUnknown {
		c[e.state-1] += d
	}
	c[len(c)-1] += d * int64(e.attempts)
}

// ixEntry is what the indexes hold about one record.
type ixEntry struct {
	key              uuid.UUID
	created, expires int64 // Unix nanoseconds
	state            journal.State
	attempts         int
	shash            [8]byte // sessionHash(session)
	// The intent's names, for the counters and a suppressed record's guard
	// entry; empty in an entry made from a fresh entry.
	tenant, session, tool string
}

func (e *ixEntry) set(r *journal.Record) {
	*e = ixEntry{
		key: r.Key, created: nanos(r.Created), expires: nanos(r.Expires),
		state: r.State, attempts: len(r.Attempts), shash: sessionHash(r.Intent.Session),
		tenant: r.Intent.Tenant, session: r.Intent.Session, tool: r.Intent.Tool,
	}
}

// nanos is t in Unix nanoseconds, 0 for the zero time (as decoded).
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// appendTime appends t so that byte order is numeric order.
func appendTime(b []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(t)^(1<<63))
}

func readTime(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

func appendStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// lastBelow moves c to the last key of the bucket below the one-byte
// prefix to, and returns it (nil when there is none).
func lastBelow(c *bbolt.Cursor, to byte) []byte {
	if k, _ := c.Seek([]byte{to}); k == nil {
		k, _ = c.Last()
		return k
	}
	k, _ := c.Prev()
	return k
}

// walkExpired calls fn with the key of each 'e' entry whose expiry is at or
// before t, the earliest first, until fn returns false.
func walkExpired(ix *bbolt.Bucket, t int64, fn func(key uuid.UUID) bool) {
	c := ix.Cursor()
	for k := lastBelow(c, pfxExpiry+1); k != nil && len(k) == 25 && k[0] == pfxExpiry; k, _ = c.Prev() {
		if ^readTime(k[1:]) > t || !fn(uuid.UUID(k[9:])) {
			return
		}
	}
}

// sessionHash is the 8-byte hash of a session's name that the session
// index groups by (long keys make a deeper tree, every level of which a
// commit rewrites). A collision costs reads, never a wrong answer: List
// keeps only the records that match.
func sessionHash(session string) [8]byte {
	// FNV-1a, 64 bits: hash/fnv's New64a without its allocations.
	h := uint64(14695981039346656037)
	for i := 0; i < len(session); i++ {
		h ^= uint64(session[i])
		h *= 1099511628211
	}
	var out [8]byte
	binary.BigEndian.PutUint64(out[:], h)
	return out
}

// timeKeyLen is the length of a time index key ('d' created key).
const timeKeyLen = 1 + 8 + 16

// appendSessionEntry appends the session index's key for a record to b:
// session hash, creation time, key. A session's records are one range of
// it, oldest first.
func appendSessionEntry(b []byte, created int64, shash [8]byte, key uuid.UUID) []byte {
	b = append(append(b, pfxSession), shash[:]...)
	return append(appendTime(b, created), key[:]...)
}

// sessionKeyLen is the length of a session index key.
const sessionKeyLen = 1 + 8 + 8 + 16

func guardPrefix(tenant, session, tool string) []byte {
	b := make([]byte, 0, 1+3*binary.MaxVarintLen64+len(tenant)+len(session)+len(tool)+16)
	return appendGuardPrefix(b, tenant, session, tool)
}

func appendGuardPrefix(b []byte, tenant, session, tool string) []byte {
	return appendStr(appendStr(appendStr(append(b, pfxGuard), tenant), session), tool)
}

func openPrefix(st journal.State) []byte { return []byte{pfxOpen, byte(st)} }

// keyTail is the record key at the end of an index key.
func keyTail(k []byte) (uuid.UUID, error) {
	if len(k) < 17 {
		return uuid.Nil, fmt.Errorf("%w: index key of %d bytes", journal.ErrCorrupt, len(k))
	}
	return uuid.UUID(k[len(k)-16:]), nil
}

// ixKV is one index entry.
type ixKV struct{ k, v []byte }

// ixKVs are one record's index entries (at most four).
type ixKVs struct {
	n  int
	kv [4]ixKV
}

func (l *ixKVs) list() []ixKV { return l.kv[:l.n] }

// entries lists e's index entries in one buffer from t (txTouches.bytes):
// bbolt keeps the values it puts uncopied for the transaction.
func (e *ixEntry) entries(t *txTouches) ixKVs {
	var l ixKVs
	n := 2*timeKeyLen + sessionKeyLen + 8
	if e.state == journal.StateSuppressed {
		n += 1 + 3*binary.MaxVarintLen64 + len(e.tenant) + len(e.session) + len(e.tool) + 16
	}
	buf := t.bytes(n)
	add := func(k, v []byte) {
		l.kv[l.n] = ixKV{k: k, v: v}
		l.n++
	}
	cut := func(from int) []byte { return buf[from:len(buf):len(buf)] }
	at := len(buf)
	buf = append(appendTime(append(buf, pfxTime), e.created), e.key[:]...)
	add(cut(at), nil)
	at = len(buf)
	buf = appendSessionEntry(buf, e.created, e.shash, e.key)
	add(cut(at), nil)
	if machine.Expires(e.state) {
		at = len(buf)
		buf = append(appendTime(append(buf, pfxExpiry), ^e.expires), e.key[:]...)
		add(cut(at), nil)
	} else {
		at = len(buf)
		buf = append(appendTime(append(buf, pfxOpen, byte(e.state)), e.expires), e.key[:]...)
		k := cut(at)
		at = len(buf)
		buf = appendTime(buf, e.created)
		add(k, cut(at))
	}
	if e.state == journal.StateSuppressed {
		at = len(buf)
		buf = append(appendGuardPrefix(buf, e.tenant, e.session, e.tool), e.key[:]...)
		add(cut(at), nil)
	}
	return l
}

// indexPut writes r (encoded as enc) into tx with its index entries and
// counters, replacing the file's record of its key; a new key goes into
// the fresh bucket. unfiled (overlaid.unfiled) spares reading the old one.
func (s *Store) indexPut(tx *bbolt.Tx, r *journal.Record, enc []byte, unfiled bool) error {
	recs, fresh := tx.Bucket(bucketRecords), tx.Bucket(bucketFresh)
	var oldE, newE ixEntry
	var old *ixEntry
	if !unfiled {
		var err error
		if old, err = s.storedEntry(recs, r.Key, &oldE); err != nil {
			return err
		}
	}
	new := &newE
	new.set(r)
	if new.state == journal.StateSuppressed {
		s.suppressing.add(new.tool) // before the commit: see maySuppress
	}
	s.touched(r.Key, enc)
	if err := recount(s.touches, tx.Bucket(bucketCounts), old, new); err != nil {
		return err
	}
	if err := recs.Put(r.Key[:], enc); err != nil {
		return err
	}
	switch {
	case old != nil && fresh.Get(r.Key[:]) != nil: // (a new key is never fresh)
		return fresh.Put(r.Key[:], freshValue(s.touches, new))
	case old != nil:
		return reindex(s.touches, tx.Bucket(bucketIndex), old, new)
	}
	if err := fresh.Put(r.Key[:], freshValue(s.touches, new)); err != nil {
		return err
	}
	if n := countKeys(fresh); n < freshMax {
		return nil
	}
	return s.flushFresh(tx)
}

// indexDelete removes key's record and its index entries from tx.
func (s *Store) indexDelete(tx *bbolt.Tx, key uuid.UUID) error {
	recs, fresh := tx.Bucket(bucketRecords), tx.Bucket(bucketFresh)
	var oldE ixEntry
	old, err := s.storedEntry(recs, key, &oldE)
	if err != nil || old == nil {
		return err
	}
	s.touched(key, nil)
	if err := recount(s.touches, tx.Bucket(bucketCounts), old, nil); err != nil {
		return err
	}
	if fresh.Get(key[:]) != nil {
		err = fresh.Delete(key[:])
	} else {
		err = reindex(s.touches, tx.Bucket(bucketIndex), old, nil)
	}
	if err != nil {
		return err
	}
	return recs.Delete(key[:])
}

// storedEntry makes in dst the index entry of key's stored record, or nil.
func (s *Store) storedEntry(recs *bbolt.Bucket, key uuid.UUID, dst *ixEntry) (*ixEntry, error) {
	var r journal.Record
	if found, err := s.readIn(recs, key, &r); !found || err != nil {
		return nil, err
	}
	dst.set(&r)
	return dst, nil
}

// freshMax is how many new records the fresh bucket holds before the write
// that fills it moves them into the index.
const freshMax = 16

// flushFresh moves the records of the fresh bucket into the index, made
// from their fresh entries; a suppressed record (whose guard entry needs
// its names), or one whose entry is malformed, is read instead. A record
// that cannot be read is dropped from the fresh bucket, rather than fail
// this write and every one after it.
func (s *Store) flushFresh(tx *bbolt.Tx) error {
	fresh, ix, recs := tx.Bucket(bucketFresh), tx.Bucket(bucketIndex), tx.Bucket(bucketRecords)
	var buf [freshMax + 1]freshEntry
	ents := buf[:0]
	var odd []uuid.UUID // keys whose entry must be read from the record
	var junk [][]byte   // not a record's key: dropped
	c := fresh.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(k) != 16 {
			junk = append(junk, bytes.Clone(k))
			continue
		}
		e, ok := decodeFresh(k, v)
		if !ok || e.state == journal.StateSuppressed {
			odd = append(odd, uuid.UUID(k))
			continue
		}
		ents = append(ents, e)
	}
	var e ixEntry
	for i := range ents {
		ents[i].ixEntry(&e)
		if err := reindex(s.touches, ix, nil, &e); err != nil {
			return err
		}
		if err := fresh.Delete(ents[i].key[:]); err != nil {
			return err
		}
	}
	for _, key := range odd {
		if v := recs.Get(key[:]); v != nil {
			r, err := codec.Decode(v)
			if err != nil {
				continue
			}
			e.set(&r)
			if err := reindex(s.touches, ix, nil, &e); err != nil {
				return err
			}
		}
		if err := fresh.Delete(key[:]); err != nil {
			return err
		}
	}
	for _, k := range junk {
		if err := fresh.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func countKeys(b *bbolt.Bucket) int {
	n := 0
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	return n
}

// freshValueLen is a fresh entry's value: state, creation time, expiry,
// session hash. 16 entries of 16+16+25 bytes with the page header are 928,
// under bbolt's inline limit of 1,024.
const freshValueLen = 1 + 8 + 8 + 8

// freshValue is the fresh bucket's value for e: all that the queries ask
// of a record before they read it.
func freshValue(t *txTouches, e *ixEntry) []byte {
	b := append(t.bytes(freshValueLen), byte(e.state))
	b = appendTime(appendTime(b, e.created), e.expires)
	return append(b, e.shash[:]...)
}

// freshEntry is one entry of the fresh bucket.
type freshEntry struct {
	key              uuid.UUID
	state            journal.State
	created, expires int64
	session          [8]byte // sessionHash
}

// decodeFresh reads the fresh entry k → v, if freshValue wrote it.
func decodeFresh(k, v []byte) (freshEntry, bool) {
	if len(k) != 16 || len(v) != freshValueLen {
		return freshEntry{}, false
	}
	return freshEntry{key: uuid.UUID(k), state: journal.State(v[0]),
		created: readTime(v[1:9]), expires: readTime(v[9:17]), session: [8]byte(v[17:25])}, true
}

// ixEntry makes dst the index entry of e's record, without the intent's
// names: not for a suppressed record, nor for the counters.
func (e *freshEntry) ixEntry(dst *ixEntry) {
	*dst = ixEntry{key: e.key, created: e.created, expires: e.expires, state: e.state, shash: e.session}
}

// expired and overdue are Expired and Overdue at t (Unix nanoseconds).
func (e *freshEntry) expired(t int64) bool { return machine.Expires(e.state) && e.expires <= t }
func (e *freshEntry) overdue(t int64) bool { return !machine.Expires(e.state) && e.expires <= t }

// mayMatch reports whether the record of e may match f.
func (e *freshEntry) mayMatch(f *journal.Filter) bool {
	switch {
	case f.State != 0 && e.state != f.State,
		f.Session != "" && e.session != sessionHash(f.Session),
		!f.Since.IsZero() && e.created < nanos(f.Since),
		!f.Until.IsZero() && e.created >= nanos(f.Until):
		return false
	}
	return true
}

// freshEntries reads the fresh bucket, if there is one.
func (s *Store) freshEntries(tx *bbolt.Tx) ([]freshEntry, error) {
	fresh := tx.Bucket(bucketFresh)
	if fresh == nil {
		return nil, nil
	}
	out := make([]freshEntry, 0, freshMax)
	c := fresh.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		e, ok := decodeFresh(k, v)
		if !ok {
			return nil, fmt.Errorf("journal %s: %w: fresh entry %x → %x", s.path, journal.ErrCorrupt, clip(k), clip(v))
		}
		out = append(out, e)
	}
	return out, nil
}

// reindex replaces the index entries of old (nil: none) with those of new
// (nil: none), touching only what differs.
func reindex(t *txTouches, ix *bbolt.Bucket, old, new *ixEntry) error {
	var oldL, newL ixKVs
	if old != nil {
		oldL = old.entries(t)
	}
	if new != nil {
		newL = new.entries(t)
	}
	oldKV, newKV := oldL.list(), newL.list()
	for _, o := range oldKV {
		if !hasKV(newKV, o) {
			if err := ix.Delete(o.k); err != nil {
				return err
			}
		}
	}
	for _, n := range newKV {
		if !hasKV(oldKV, n) {
			if err := ix.Put(n.k, n.v); err != nil {
				return err
			}
		}
	}
	return nil
}

// recount moves the counters from old (nil: none) to new (nil: none),
// touching none when neither state nor attempts change.
func recount(t *txTouches, counts *bbolt.Bucket, old, new *ixEntry) error {
	if old != nil && new != nil && old.tool == new.tool {
		if old.state == new.state && old.attempts == new.attempts {
			return nil
		}
		return addCounts(t, counts, new.tool, old, new)
	}
	if old != nil {
		if err := addCounts(t, counts, old.tool, old, nil); err != nil {
			return err
		}
	}
	if new != nil {
		return addCounts(t, counts, new.tool, nil, new)
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func hasKV(list []ixKV, kv ixKV) bool {
	return slices.ContainsFunc(list, func(x ixKV) bool { return bytes.Equal(x.k, kv.k) && bytes.Equal(x.v, kv.v) })
}

// addCounts changes tool's counters: takes out away (nil: none) and
// counts in (nil: none); counters all at zero are removed.
func addCounts(t *txTouches, b *bbolt.Bucket, tool string, out, in *ixEntry) error {
	k := countKey(t.bytes(1+len(tool)), tool) // a stack buffer would escape through Get and Put
	var c toolCounts
	if v := b.Get(k); v != nil {
		if err := c.decode(v); err != nil {
			return err
		}
	}
	if out != nil {
		c.add(out, -1)
	}
	if in != nil {
		c.add(in, 1)
	}
	if c == (toolCounts{}) {
		return b.Delete(k)
	}
	for _, n := range c {
		if n < 0 {
			return fmt.Errorf("%w: counters of tool %q below zero", journal.ErrCorrupt, tool)
		}
	}
	return b.Put(k, c.encode(t.bytes(len(c)*2)))
}

// indexedStats reads Stats from the counters and the time-ordered indexes.
func indexedStats(tx *bbolt.Tx, now time.Time) (journal.Stats, error) {
	st := machine.NewStats()
	ix := tx.Bucket(bucketIndex)
	cc := tx.Bucket(bucketCounts).Cursor()
	for k, v := cc.First(); k != nil; k, v = cc.Next() {
		var c toolCounts
		if len(k) < 1 || k[0] != 't' {
			return journal.Stats{}, fmt.Errorf("%w: counter %q", journal.ErrCorrupt, clip(k))
		}
		if err := c.decode(v); err != nil {
			return journal.Stats{}, fmt.Errorf("counters of tool %q: %w", clip(k[1:]), err)
		}
		n := 0
		for i, x := range c[:len(c)-1] {
			if x != 0 {
				st.ByState[journal.State(i+1)] += int(x)
				n += int(x)
			}
		}
		if n != 0 {
			st.ByTool[string(k[1:])] = n
		}
		st.Records += n
		st.Attempts += int(c[len(c)-1])
	}
	c := ix.Cursor()
	t := now.UnixNano()
	walkExpired(ix, t, func(uuid.UUID) bool { st.Expired++; return true })
	st.OverdueUnknown = countOpen(ix, journal.StateUnknown, t, nil) + countOpen(ix, journal.StatePending, t, nil)
	if first, _ := c.Seek([]byte{pfxTime}); first != nil && first[0] == pfxTime && len(first) == timeKeyLen {
		if k := lastBelow(c, pfxTime+1); k != nil && k[0] == pfxTime && len(k) == timeKeyLen {
			st.Oldest, st.Newest = time.Unix(0, readTime(first[1:9])).UTC(), time.Unix(0, readTime(k[1:9])).UTC()
		}
	}
	return st, nil
}

// openKeys lists the entries of the unknown or pending (st) records.
func openKeys(ix *bbolt.Bucket, st journal.State) ([]*ixEntry, error) {
	prefix := openPrefix(st)
	var out []*ixEntry
	c := ix.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		key, err := keyTail(k)
		if err != nil || len(v) != 8 {
			return nil, fmt.Errorf("%w: index entry %x", journal.ErrCorrupt, clip(k))
		}
		out = append(out, &ixEntry{key: key, created: readTime(v), expires: readTime(k[len(prefix):])})
	}
	return out, nil
}
