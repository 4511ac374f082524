package bolt

import (
	"sync"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/codec"
)

// The settled-record cache: a replay of a small settled record this
// process has written or read is answered from memory.
//
// Coherence (docs/journal.md, "The bbolt file"): every record write drops
// the key and counts itself in flight on its stripe until its transaction
// is over; a reader fills the cache only if no write touched the stripe
// across its read, a committed write only when newest on the stripe (seq).

const (
	// cacheStripeRecords bounds each stripe's cache: 256 stripes keep at
	// most 8,192 records.
	cacheStripeRecords = 32
	// cacheMaxBytes is the largest record kept, counting its input,
	// output, error and attempts: at most 32 MiB in all.
	cacheMaxBytes = 4 << 10
)

// testHookRead, when set by a test, runs between a cache miss's read of
// the file and its fill.
var testHookRead func(key uuid.UUID)

// recordCache is one stripe's share of the cache.
type recordCache struct {
	mu sync.Mutex
	m  map[uuid.UUID]*journal.Record
	// gen moves each time a write on the stripe is counted out; inflight
	// counts the writes touching the stripe whose transaction is not over;
	// seq is the newest transaction counted out. Guarded by mu.
	gen      uint64
	inflight int
	seq      uint64
	// ghosts are the keys of the stripe's last misses: a read fills only at
	// a key's second miss, so scattered reads pay no copy. Guarded by mu.
	ghosts [4]uuid.UUID
	ghost  uint8
}

// touch is one record write of a transaction: the encoding written under
// key (nil for a delete), unchanged until writeTx returns.
type touch struct {
	key uuid.UUID
	enc []byte
}

// txTouches collects the record writes of the write transaction in
// progress: set by writeTx (bbolt runs one at a time), read by indexPut and
// indexDelete.
type txTouches struct {
	seq   uint64
	items []touch
	// arena holds the values the transaction's Puts hand to bbolt (bytes).
	arena []byte
}

// bytes returns an empty slice with room for n bytes, for a value that a
// Put of t's transaction hands to bbolt, which keeps it uncopied until the
// transaction is over: carved from one buffer that the next transaction
// reuses. A nil t (a write outside writeTx) allocates.
func (t *txTouches) bytes(n int) []byte {
	if t == nil {
		return make([]byte, 0, n)
	}
	if cap(t.arena)-len(t.arena) < n {
		// The full buffer stays alive as long as the values carved from it.
		t.arena = make([]byte, 0, max(arenaSize, n))
	}
	at := len(t.arena)
	t.arena = t.arena[:at+n]
	return t.arena[at : at : at+n]
}

// arenaSize is a transaction's buffer of values: a fresh bucket's flush,
// the largest common write, takes about 2 KiB.
const arenaSize = 4 << 10

// cached copies the cache's record for key into dst, or reports a miss
// with the generation a fill must find unchanged and whether it may fill.
func (c *recordCache) cached(key uuid.UUID, dst *journal.Record) (hit bool, gen uint64, fill bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.m[key]; ok {
		copyRecord(dst, r)
		return true, 0, false
	}
	for _, g := range c.ghosts {
		if g == key {
			return false, c.gen, c.inflight == 0
		}
	}
	c.ghosts[c.ghost%uint8(len(c.ghosts))] = key
	c.ghost++
	return false, c.gen, false
}

// fill keeps r, read from the file at generation gen, if that still holds.
func (c *recordCache) fill(r *journal.Record, gen uint64) {
	if !cacheable(r) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen && c.inflight == 0 {
		c.put(r)
	}
}

// begin drops key and counts a write in flight.
func (c *recordCache) begin(key uuid.UUID) {
	c.mu.Lock()
	delete(c.m, key)
	c.inflight++
	c.mu.Unlock()
}

// end counts out a write of transaction seq to key; the record encoded as
// enc, when committed and the newest on the stripe, is put in, decoded as
// a read of the file would give it.
func (c *recordCache) end(key uuid.UUID, enc []byte, seq uint64, committed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	newest := c.inflight == 1 && seq >= c.seq
	c.inflight--
	c.gen++
	c.seq = max(c.seq, seq)
	delete(c.m, key)
	if !committed || !newest || enc == nil || len(enc) > cacheMaxBytes {
		return
	}
	if r, err := codec.Decode(enc); err == nil && cacheable(&r) {
		c.keep(&r) // decoded: shares nothing
	}
}

// put keeps a copy of r. c.mu is held.
func (c *recordCache) put(r *journal.Record) {
	cp := new(journal.Record)
	copyRecord(cp, r)
	c.keep(cp)
}

// keep keeps r itself, making room if the stripe is full. c.mu is held.
func (c *recordCache) keep(r *journal.Record) {
	if c.m == nil {
		c.m = make(map[uuid.UUID]*journal.Record, cacheStripeRecords)
	}
	if _, ok := c.m[r.Key]; !ok && len(c.m) >= cacheStripeRecords {
		for k := range c.m { // an arbitrary one: map order
			delete(c.m, k)
			break
		}
	}
	c.m[r.Key] = r
}

// cacheable reports whether r may be kept: settled and small.
func cacheable(r *journal.Record) bool {
	if !r.State.Settled() {
		return false
	}
	n := len(r.Input) + len(r.Output) + len(r.ErrorMessage) + len(r.ErrorClass)
	for i := range r.Attempts {
		n += 64 + len(r.Attempts[i].ID) + len(r.Attempts[i].Error)
	}
	return n <= cacheMaxBytes
}

// copyRecord sets dst to a copy of src that shares no mutable memory.
func copyRecord(dst, src *journal.Record) {
	*dst = *src
	if src.Input != nil || src.Output != nil {
		buf := make([]byte, len(src.Input)+len(src.Output))
		n := copy(buf, src.Input)
		copy(buf[n:], src.Output)
		if src.Input != nil {
			dst.Input = buf[:n:n]
		}
		if src.Output != nil {
			dst.Output = buf[n:]
		}
	}
	if src.Attempts != nil {
		dst.Attempts = append([]journal.Attempt(nil), src.Attempts...)
	}
	if src.Resolution != nil {
		res := *src.Resolution
		if res.Output != nil {
			res.Output = append([]byte(nil), res.Output...)
		}
		dst.Resolution = &res
	}
}

// touched records a write of key (enc nil: a delete) for the cache.
func (s *Store) touched(key uuid.UUID, enc []byte) {
	t := s.touches
	if t == nil { // a write outside writeTx: only create, before any read
		return
	}
	s.stripes[key[0]].cache.begin(key)
	t.items = append(t.items, touch{key: key, enc: enc})
}

// settle counts out the writes of transaction t once it is over.
func (s *Store) settle(t *txTouches, committed bool) {
	for _, w := range t.items {
		s.stripes[w.key[0]].cache.end(w.key, w.enc, t.seq, committed)
	}
}
