package check_test

import (
	"encoding/json"
	"fmt"

	"github.com/agentonce/agentonce/cmd/agentcheck/internal/check"
)

// Check reads a history against its plan: here an Unkeyed intent whose
// tool ran twice, the second time after a restart, and whose re-issue was
// answered with the second effect's output.
func ExampleCheck() {
	plan := &check.Plan{Seed: 42, Store: "bolt", Intents: []check.Intent{
		{ID: "i1", Tool: "unkeyed_rec", Kind: check.Unkeyed, Scenario: check.ScLease, Payloads: 1}}}
	out := func(n int, attempt string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"effect":%d,"attempt":%q}`, n, attempt))
	}
	history := []check.Event{
		{T: 1, Ev: check.EvCall, Proc: "w0.1", Intent: "i1", Call: "c1"},
		{T: 2, Ev: check.EvAttempt, Proc: "w0.1", Intent: "i1", Attempt: "w0.1#1"},
		{T: 3, Ev: check.EvProc, Proc: "runner", Subject: "w0.1", Note: "kill w0.1"},
		{T: 4, Ev: check.EvCall, Proc: "w0.2", Intent: "i1", Call: "c2"},
		{T: 5, Ev: check.EvAttempt, Proc: "w0.2", Intent: "i1", Attempt: "w0.2#1"},
		{T: 6, Ev: check.EvEffect, Proc: "downstream", Intent: "i1", Attempt: "w0.2#1", Effect: 1, Output: out(1, "w0.2#1")},
		{T: 7, Ev: check.EvAnswer, Proc: "w0.2", Intent: "i1", Call: "c2", Status: "executed",
			Outcome: check.OutSucceeded, Source: check.SrcExecuted, Output: out(1, "w0.2#1")},
		{T: 8, Ev: check.EvEffect, Proc: "downstream", Intent: "i1", Attempt: "w0.1#1", Effect: 2, Output: out(2, "w0.1#1")},
	}
	rep := check.Check(plan, history)
	for _, v := range rep.Violations {
		fmt.Printf("%s %s: %s\n", v.Intent, v.Rule, v.Detail)
	}
	fmt.Println(check.SummaryLine([]*check.Report{rep}))
	// Output:
	// i1 duplicate-effect: 2 effects, by attempts w0.2#1, w0.1#1
	// agentcheck: 1 intents, 2 effects, 1 violations
}
