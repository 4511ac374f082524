package check

import (
	"reflect"
	"testing"
	"time"
)

func TestGenerateIsDeterministic(t *testing.T) {
	o := GenOptions{Store: "postgres", Workers: 3, Duration: 20 * time.Second}
	a, b := Generate(42, o), Generate(42, o)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("Generate(42) twice gave different plans")
	}
	if c := Generate(43, o); reflect.DeepEqual(a.Intents, c.Intents) {
		t.Errorf("Generate(42) and Generate(43) gave the same intents")
	}
}

func TestGenerateCoversEveryScenario(t *testing.T) {
	for _, store := range []string{"bolt", "postgres"} {
		p := Generate(1, GenOptions{Store: store, Workers: 3, Duration: 20 * time.Second})
		if len(p.Intents) != 200 {
			t.Errorf("%s: Generate made %d intents; want 200 (10 a second)", store, len(p.Intents))
		}
		seen := map[string]int{}
		for _, in := range p.Intents {
			seen[in.Scenario]++
			if in.Kind != toolSpec(in.Tool).Kind {
				t.Errorf("%s: intent %s: kind %s for tool %s", store, in.ID, in.Kind, in.Tool)
			}
			for _, is := range in.Issues {
				if is.Worker < 0 || is.Worker >= p.Workers {
					t.Errorf("%s: intent %s: issue for worker %d of %d", store, in.ID, is.Worker, p.Workers)
				}
			}
			if in.AtMS >= p.DurationMS {
				t.Errorf("%s: intent %s at %dms, after the run's %dms", store, in.ID, in.AtMS, p.DurationMS)
			}
		}
		for _, s := range scenarioWeights {
			if s.name == ScSkew && store == "bolt" {
				if seen[s.name] != 0 {
					t.Errorf("bolt: %d intents of scenario %s; want none (no skewed worker)", seen[s.name], s.name)
				}
				continue
			}
			if seen[s.name] == 0 {
				t.Errorf("%s: no intent of scenario %s", store, s.name)
			}
		}
	}
}

func TestGenerateLeaseScenarioOutlivesTheLease(t *testing.T) {
	p := Generate(5, GenOptions{Store: "postgres", Workers: 3, Duration: 20 * time.Second})
	for _, in := range p.Intents {
		if in.Scenario != ScLease {
			continue
		}
		if d := in.Script[0].DelayMS; d <= p.LeaseMS {
			t.Errorf("intent %s: downstream delay %dms; want more than the lease %dms", in.ID, d, p.LeaseMS)
		}
		a, b := in.Issues[0], in.Issues[1]
		if a.Worker == b.Worker || b.AfterMS <= p.LeaseMS || b.AfterMS >= in.Script[0].DelayMS {
			t.Errorf("intent %s: issues %+v, %+v; want two workers, the second after the lease and before the tool ends", in.ID, a, b)
		}
		if p.Skews[a.Worker] != 0 || p.Skews[b.Worker] > 0 {
			t.Errorf("intent %s: workers %d, %d with skews %d, %d; want the first true, the second not ahead",
				in.ID, a.Worker, b.Worker, p.Skews[a.Worker], p.Skews[b.Worker])
		}
	}
}

// TestGenerateApprovalScenario: an approval intent calls a tool that needs
// approval, from workers whose clocks are not ahead (the deadline is a
// journal clock's), and its approvals are by distinct approvers.
func TestGenerateApprovalScenario(t *testing.T) {
	p := Generate(3, GenOptions{Store: "postgres", Workers: 3, Duration: 30 * time.Second, Scenarios: []string{ScApproval}})
	fates := map[string]int{}
	for _, in := range p.Intents {
		spec := toolSpec(in.Tool)
		if spec.Approvals == 0 || in.Kind != spec.Kind {
			t.Fatalf("intent %s: tool %s (%s) needs %d approvals; want an approval tool", in.ID, in.Tool, in.Kind, spec.Approvals)
		}
		for _, is := range in.Issues {
			if p.Skews[is.Worker] == skewAhead {
				t.Errorf("intent %s: issued by worker %d, whose clock runs ahead", in.ID, is.Worker)
			}
		}
		by := map[string]bool{}
		for _, d := range in.Decisions {
			fates[d.Do]++
			if d.Do == DoApprove && by[d.By] {
				t.Errorf("intent %s: %s approves twice", in.ID, d.By)
			}
			by[d.By] = true
		}
	}
	for _, do := range []string{DoApprove, DoReject, DoForge} {
		if fates[do] == 0 {
			t.Errorf("no %s decision in %d intents", do, len(p.Intents))
		}
	}
}
