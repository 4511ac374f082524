package retryclass

import (
	"cmp"
	"sync"
	"time"
)

// BudgetOptions configures a Budget. A nil *BudgetOptions means defaults;
// each field's zero value is its default.
type BudgetOptions struct {
	// Ratio is how many retries are allowed per call started, over the
	// window. Zero means 0.2; negative means 0.
	Ratio float64
	// MinPerSecond is a floor of retries allowed per second. Zero means 1;
	// negative means 0.
	MinPerSecond float64
	// Window is how far back calls and retries are counted. Zero means 10s.
	Window time.Duration
}

// budgetSlots is how many equal slots the window counts in.
const budgetSlots = 10

// Budget limits retries across the calls that share it, after Finagle's
// RetryBudget: within the last Window (counted in tenths, so between 9/10
// of it and all of it), retries may number at most Ratio × calls +
// MinPerSecond × Window seconds. A call is counted by Policy.NewSchedule
// and a retry by a Schedule.Next that returns ok; when the budget is spent
// Next stops with StopBudget and counts nothing.
//
// A caller that makes its Schedule lazily, only once a call has failed,
// counts only failing calls: the budget is then stricter than Ratio says,
// and the floor is what keeps sparse failures retried.
//
// Unlike a circuit breaker it never refuses a first try, which the model
// would see as a failure. A Budget is safe for concurrent use; share one
// per downstream.
type Budget struct {
	ratio    float64
	floor    float64 // retries always allowed per window
	slotSize time.Duration

	mu      sync.Mutex // guards the slots
	slot    [budgetSlots]int64
	calls   [budgetSlots]int64
	retries [budgetSlots]int64
}

// NewBudget returns a Budget; a nil opts means defaults.
func NewBudget(opts *BudgetOptions) *Budget {
	var o BudgetOptions
	if opts != nil {
		o = *opts
	}
	ratio := cmp.Or(o.Ratio, 0.2)
	perSec := cmp.Or(o.MinPerSecond, 1)
	window := cmp.Or(o.Window, 10*time.Second)
	if window < budgetSlots {
		window = budgetSlots
	}
	return &Budget{
		ratio:    max(ratio, 0),
		floor:    max(perSec, 0) * window.Seconds(),
		slotSize: window / budgetSlots,
	}
}

// index returns now's slot, clearing it if it last held an older period.
// b.mu must be held.
func (b *Budget) index(now time.Time) int {
	n := now.UnixNano() / int64(b.slotSize)
	i := int(n % budgetSlots)
	if i < 0 {
		i += budgetSlots
	}
	if b.slot[i] != n {
		b.slot[i], b.calls[i], b.retries[i] = n, 0, 0
	}
	return i
}

// sums returns the calls and retries counted within the window ending now.
// b.mu must be held.
func (b *Budget) sums(now time.Time) (calls, retries int64) {
	n := now.UnixNano() / int64(b.slotSize)
	for i := range b.slot {
		if n-b.slot[i] < budgetSlots {
			calls += b.calls[i]
			retries += b.retries[i]
		}
	}
	return calls, retries
}

// request counts one call. Nil-safe.
func (b *Budget) request(now time.Time) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.calls[b.index(now)]++
	b.mu.Unlock()
}

// withdraw counts one retry if the budget allows it. Nil-safe: a nil
// Budget allows every retry.
func (b *Budget) withdraw(now time.Time) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	i := b.index(now)
	calls, retries := b.sums(now)
	if float64(retries+1) > b.ratio*float64(calls)+b.floor {
		return false
	}
	b.retries[i]++
	return true
}
