package journal

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestIndexExpiry checks the expiry heap against a pass over every entry,
// through random puts (new records, changed expiries, pending leases) and
// removals.
func TestIndexExpiry(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ix := newIndex()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var keys []uuid.UUID
	at := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Minute) }
	for step := range 5000 {
		switch op := rng.IntN(10); {
		case op < 5 || len(keys) == 0:
			k := uuid.New()
			keys = append(keys, k)
			ix.put(&Record{Key: k, State: StateSucceeded, Created: t0, Expires: at(rng.IntN(1000))})
		case op < 8:
			k := keys[rng.IntN(len(keys))]
			r := Record{Key: k, State: StatePending, Created: t0, Expires: at(rng.IntN(1000))}
			r.Lease.Expires = at(rng.IntN(1000))
			ix.put(&r)
		default:
			i := rng.IntN(len(keys))
			ix.remove(keys[i])
			keys = slices.Delete(keys, i, i+1)
		}
		if step%97 != 0 {
			continue
		}
		h := ix.expiry
		for i := 1; i < len(h); i++ {
			if expLess(h[i], h[(i-1)/2]) {
				t.Fatalf("step %d: heap order broken at %d", step, i)
			}
		}
		now := at(rng.IntN(1100))
		got := ix.expired(now)
		var want []uuid.UUID
		for k, e := range ix.byKey {
			if e.gcAt <= now.UnixNano() {
				want = append(want, k)
			}
		}
		slices.SortFunc(got, compareKeys)
		slices.SortFunc(want, compareKeys)
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: expired(%v) = %d keys; want %d", step, now, len(got), len(want))
		}
		if len(ix.expiry) > 2*len(ix.byKey)+1024 {
			t.Fatalf("step %d: %d heap items for %d records", step, len(ix.expiry), len(ix.byKey))
		}
	}
}
