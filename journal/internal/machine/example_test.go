package machine_test

import (
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/machine"
	"github.com/agentonce/agentonce/keyderive"
)

// The decision a store carries out for each Begin: a new intent, then the
// same intent asked again while its lease is live, after the lease ran out
// but while the attempt may still act downstream, and once it cannot.
func ExampleDecideBegin() {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	req := journal.BeginRequest{
		Key:         uuid.MustParse("6ba7b810-9dad-11d1-80b4-00c04fd430c8"),
		Intent:      keyderive.Intent{Tenant: "acme", Session: "s1", Turn: "1", Tool: "charge"},
		Fingerprint: keyderive.FingerprintOf([]byte(`{"amount":4900}`)),
		Owner:       "agent-1",
		LeaseTTL:    10 * time.Second,
		Settle:      time.Minute, // attempt timeout + the tool's settle window
	}
	d := machine.DecideBegin(nil, &req, t0)
	fmt.Println(d.Result.Outcome == journal.Started, d.Guard, d.Write != nil)
	rec := *d.Write

	other := req
	other.Owner = "agent-2"
	for _, at := range []time.Duration{5 * time.Second, 30 * time.Second, time.Minute} {
		d := machine.DecideBegin(&rec, &other, t0.Add(at))
		fmt.Println(at, d.Result.Outcome == journal.Held, d.Result.Outcome == journal.TakenOver, d.Guard)
	}
	// Output:
	// true true true
	// 5s true false false
	// 30s true false false
	// 1m0s false true true
}
