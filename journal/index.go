// The in-memory indexes of a bbolt journal: by session, tool and state,
// the suppression guard, and a min-heap of expiry times that GC walks only
// as far as now. A writer's open reads and decodes every record to build
// them, which also proves the file readable. Measured costs (CPU per record
// at open, bytes per record held) are in BENCHMARKS.md.

package journal

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
)

// The bbolt file holds these buckets:
//
//	meta      "version" → schema version (uvarint), "namespace" → 16 bytes,
//	          "sessions-clean" → whether the sessions bucket is complete
//	records   key (16 bytes) → encoded record
//	sessions  the session index of sessions.go
//
// A writer's secondary indexes (by session, tool, state, expiry, and the
// suppression guard) live in memory, built from the records when the file
// is opened and updated by the commit loop after each commit, in commit
// order. Why not index buckets in the file: every index entry lands
// on its own B+tree leaf, and each extra dirty page costs about a tenth of
// a commit on this kind of disk; with five indexes a write cost 1.5× a bare
// bbolt Update. Kept in memory, a record write dirties the same pages as a
// bare Update of the record, and an index can never disagree with the file
// after a crash, because it is rebuilt from it.
var (
	bucketMeta    = []byte("meta")
	bucketRecords = []byte("records")

	metaVersion   = []byte("version")
	metaNamespace = []byte("namespace")
)

// ixEntry is what the indexes know about one committed record: enough to
// answer every Filter and Stats field without reading it.
type ixEntry struct {
	key                         uuid.UUID
	created, expires            int64 // Unix nanoseconds
	gcAt                        int64 // when GC may remove it; never for unknown and pending
	state                       State
	attempts                    int32
	tenant, session, turn, tool string // interned
}

type guardKey struct{ tenant, session, tool string }

// index is the in-memory secondary index of a BoltStore's committed
// records. It is safe for concurrent use.
type index struct {
	mu        sync.RWMutex
	byKey     map[uuid.UUID]*ixEntry                   // guarded by mu
	bySession map[string]map[uuid.UUID]*ixEntry        // guarded by mu
	byTool    map[string]map[uuid.UUID]*ixEntry        // guarded by mu
	byState   [StateUnknown + 1]map[uuid.UUID]*ixEntry // guarded by mu
	// guard holds the suppressed records by (tenant, session, tool).
	guard  map[guardKey]map[uuid.UUID]*ixEntry // guarded by mu
	intern map[string]string                   // guarded by mu
	// expiry is a min-heap of (gcAt, key), so that GC finds the expired
	// records without looking at the others. Items go stale when a record
	// changes its gcAt or goes; stale items are dropped when they reach
	// the top, and the heap is rebuilt when they outnumber the records.
	expiry []expItem // guarded by mu

	// track turns on the session index's change log (see sessions.go);
	// log and overflow hold it. All guarded by mu.
	track    bool
	log      []sessionOp
	overflow bool
}

// logSession records a change of the session index while tracking.
func (ix *index) logSession(add bool, e *ixEntry) {
	if !ix.track || ix.overflow {
		return
	}
	if len(ix.log) >= maxSessionLog {
		ix.log, ix.overflow = nil, true
		return
	}
	ix.log = append(ix.log, sessionOp{add: add, k: sessionKey(e.session, e.tenant, e.created, e.key)})
}

// never is the gcAt of a record GC keeps whatever its TTL (see Expired).
const never = math.MaxInt64

// gcAtNanos is when r expires (see Expired), or never.
func gcAtNanos(r *Record) int64 {
	if !expires(r.State) {
		return never
	}
	return nanos(r.Expires)
}

type expItem struct {
	gcAt int64
	key  uuid.UUID
}

func newIndex() *index {
	ix := &index{
		byKey:     map[uuid.UUID]*ixEntry{},
		bySession: map[string]map[uuid.UUID]*ixEntry{},
		byTool:    map[string]map[uuid.UUID]*ixEntry{},
		guard:     map[guardKey]map[uuid.UUID]*ixEntry{},
		intern:    map[string]string{},
	}
	for i := range ix.byState {
		ix.byState[i] = map[uuid.UUID]*ixEntry{}
	}
	return ix
}

// str interns s, copying it: the caller's string may alias a record buffer
// or bbolt's memory map.
func (ix *index) str(s string) string {
	if v, ok := ix.intern[s]; ok {
		return v
	}
	v := string([]byte(s))
	ix.intern[v] = v
	return v
}

func addTo[K comparable](m map[K]map[uuid.UUID]*ixEntry, k K, e *ixEntry) {
	set := m[k]
	if set == nil {
		set = map[uuid.UUID]*ixEntry{}
		m[k] = set
	}
	set[e.key] = e
}

func removeFrom[K comparable](m map[K]map[uuid.UUID]*ixEntry, k K, key uuid.UUID) {
	if set := m[k]; set != nil {
		delete(set, key)
		if len(set) == 0 {
			delete(m, k)
		}
	}
}

// put indexes r, replacing its previous entry.
func (ix *index) put(r *Record) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.putLocked(&ixEntry{
		key:      r.Key,
		created:  nanos(r.Created),
		expires:  nanos(r.Expires),
		gcAt:     gcAtNanos(r),
		state:    r.State,
		attempts: int32(len(r.Attempts)),
		tenant:   r.Intent.Tenant,
		session:  r.Intent.Session,
		turn:     r.Intent.Turn,
		tool:     r.Intent.Tool,
	})
}

func (ix *index) putLocked(e *ixEntry) {
	old, had := ix.byKey[e.key]
	if !had || old.created != e.created || old.session != e.session || old.tenant != e.tenant {
		if had {
			ix.logSession(false, old)
		}
		ix.logSession(true, e)
	}
	if (!had || old.gcAt != e.gcAt) && e.gcAt != never {
		ix.push(expItem{e.gcAt, e.key})
	}
	ix.removeLocked(e.key)
	e.tenant, e.session, e.turn, e.tool = ix.str(e.tenant), ix.str(e.session), ix.str(e.turn), ix.str(e.tool)
	ix.byKey[e.key] = e
	ix.prune()
	addTo(ix.bySession, e.session, e)
	addTo(ix.byTool, e.tool, e)
	if int(e.state) < len(ix.byState) {
		ix.byState[e.state][e.key] = e
	}
	if e.state == StateSuppressed {
		addTo(ix.guard, guardKey{e.tenant, e.session, e.tool}, e)
	}
}

// remove drops key's entry.
func (ix *index) remove(key uuid.UUID) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if e, ok := ix.byKey[key]; ok {
		ix.logSession(false, e)
	}
	ix.removeLocked(key)
	ix.prune()
}

func (ix *index) stale(it expItem) bool {
	e, ok := ix.byKey[it.key]
	return !ok || e.gcAt != it.gcAt
}

func expLess(a, b expItem) bool {
	if a.gcAt != b.gcAt {
		return a.gcAt < b.gcAt
	}
	return compareKeys(a.key, b.key) < 0
}

func (ix *index) push(it expItem) {
	h := append(ix.expiry, it)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !expLess(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	ix.expiry = h
}

func (ix *index) pop() {
	h := ix.expiry
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && expLess(h[l], h[m]) {
			m = l
		}
		if r := l + 1; r < n && expLess(h[r], h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	ix.expiry = h
}

// prune drops stale items from the top of the expiry heap, and rebuilds
// it when stale items make up most of it.
func (ix *index) prune() {
	for len(ix.expiry) > 0 && ix.stale(ix.expiry[0]) {
		ix.pop()
	}
	if len(ix.expiry) > 2*len(ix.byKey)+1024 {
		h := make([]expItem, 0, len(ix.byKey))
		for key, e := range ix.byKey {
			if e.gcAt != never {
				h = append(h, expItem{e.gcAt, key})
			}
		}
		slices.SortFunc(h, func(a, b expItem) int { // a sorted slice is a heap
			if expLess(a, b) {
				return -1
			}
			if expLess(b, a) {
				return 1
			}
			return 0
		})
		ix.expiry = h
	}
}

func (ix *index) removeLocked(key uuid.UUID) {
	e, ok := ix.byKey[key]
	if !ok {
		return
	}
	delete(ix.byKey, key)
	removeFrom(ix.bySession, e.session, key)
	removeFrom(ix.byTool, e.tool, key)
	if int(e.state) < len(ix.byState) {
		delete(ix.byState[e.state], key)
	}
	if e.state == StateSuppressed {
		removeFrom(ix.guard, guardKey{e.tenant, e.session, e.tool}, key)
	}
}

// nanos is t in Unix nanoseconds, 0 for the zero time (as decoded).
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// matches reports whether e passes f (the same test as matchFilter).
func (e *ixEntry) matches(f *Filter) bool {
	switch {
	case f.Tenant != "" && e.tenant != f.Tenant,
		f.Session != "" && e.session != f.Session,
		f.Turn != "" && e.turn != f.Turn,
		f.Tool != "" && e.tool != f.Tool,
		f.State != 0 && e.state != f.State,
		!f.Since.IsZero() && e.created < nanos(f.Since),
		!f.Until.IsZero() && e.created >= nanos(f.Until):
		return false
	}
	return true
}

// list returns the keys matching f, newest first, at most limit (0: all),
// skipping the keys in skip. It reads the narrowest set the filter names.
func (ix *index) list(f *Filter, skip map[uuid.UUID]*Record) []*ixEntry {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	set := ix.byKey
	switch {
	case f.Session != "":
		set = ix.bySession[f.Session]
	case f.State != 0 && int(f.State) < len(ix.byState):
		set = ix.byState[f.State]
	case f.Tool != "":
		set = ix.byTool[f.Tool]
	}
	var out []*ixEntry
	for key, e := range set {
		if _, ok := skip[key]; !ok && e.matches(f) {
			out = append(out, e)
		}
	}
	sortNewestFirst(out)
	return out
}

// sortNewestFirst orders entries as List yields records: newest first, then
// by key, descending.
func sortNewestFirst(out []*ixEntry) {
	slices.SortFunc(out, func(a, b *ixEntry) int {
		if a.created != b.created {
			if a.created > b.created {
				return -1
			}
			return 1
		}
		return compareKeys(b.key, a.key)
	})
}

// guardCandidates returns the keys of the suppressed records of req's
// tenant, session and tool: those that may block req. GuardBlocks decides
// which do.
func (ix *index) guardCandidates(req *BeginRequest) []uuid.UUID {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	in := &req.Intent
	var out []uuid.UUID
	for key := range ix.guard[guardKey{in.Tenant, in.Session, in.Tool}] {
		if key != req.Key {
			out = append(out, key)
		}
	}
	return out
}

// expired returns the keys whose records are expired at now.
//
// It walks only the part of the expiry heap at or before now: a subtree
// whose root is later holds nothing earlier.
func (ix *index) expired(now time.Time) []uuid.UUID {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	n := now.UnixNano()
	var out []uuid.UUID
	seen := map[uuid.UUID]bool{}
	stack := []int{0}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= len(ix.expiry) || ix.expiry[i].gcAt > n { // the test of expired()
			continue
		}
		if it := ix.expiry[i]; !ix.stale(it) && !seen[it.key] {
			seen[it.key] = true
			out = append(out, it.key)
		}
		stack = append(stack, 2*i+1, 2*i+2)
	}
	return out
}

// stats counts the indexed records, skipping the keys in skip.
func (ix *index) stats(now time.Time, skip map[uuid.UUID]*Record) Stats {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	s := newStats()
	n := now.UnixNano()
	var oldest, newest int64
	for key, e := range ix.byKey {
		if _, ok := skip[key]; ok {
			continue
		}
		s.Records++
		s.ByState[e.state]++
		s.ByTool[e.tool]++
		s.Attempts += int(e.attempts)
		if e.gcAt <= n {
			s.Expired++
		}
		if e.gcAt == never && e.expires <= n {
			s.OverdueUnknown++
		}
		if s.Records == 1 || e.created < oldest {
			oldest = e.created
		}
		if s.Records == 1 || e.created > newest {
			newest = e.created
		}
	}
	if s.Records > 0 {
		s.Oldest, s.Newest = time.Unix(0, oldest).UTC(), time.Unix(0, newest).UTC()
	}
	return s
}

// load indexes one encoded record, decoding it whole: opening a journal
// proves that every record decodes.
func (ix *index) load(val []byte) error {
	r, err := decodeRecord(val)
	if err != nil {
		return err
	}
	ix.put(&r)
	return nil
}

// overdue counts the indexed unknown and pending records past their TTL
// (see Overdue), skipping the keys in skip.
func (ix *index) overdue(now time.Time, skip map[uuid.UUID]*Record) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	n, c := now.UnixNano(), 0
	for _, st := range []State{StateUnknown, StatePending} {
		for key, e := range ix.byState[st] {
			if _, ok := skip[key]; !ok && e.expires <= n {
				c++
			}
		}
	}
	return c
}
