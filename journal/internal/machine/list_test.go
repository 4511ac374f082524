package machine_test

import (
	"testing"
	"time"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/machine"
)

// Expires is journal.Expired's rule for a state alone: for every state, a
// record past its TTL expires exactly when Expires says so.
func TestExpiresAgreesWithExpired(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for st := journal.StatePending; st <= journal.StateAwaiting; st++ {
		r := journal.Record{State: st, Expires: t0}
		if got, want := machine.Expires(st), journal.Expired(&r, t0); got != want {
			t.Errorf("Expires(%s) = %v; journal.Expired of a record past its TTL = %v", st, got, want)
		}
	}
}
