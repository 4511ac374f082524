package eino_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/schema"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/adapters/eino"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

// logLines is a text log a test reads; slog's handlers write from any
// goroutine.
type logLines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logLines) warnings() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.b.String(), "\n") {
		if strings.Contains(line, "level=WARN") {
			out = append(out, line)
		}
	}
	return out
}

func (l *logLines) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// chargeTwice is a model that asks for the charge in two rounds of one
// turn, then answers.
func chargeTwice() *scriptedModel {
	return &scriptedModel{reply: func(n int, _ []*schema.Message) *schema.Message {
		if n <= 2 {
			return toolCalls(callCharge("call_"+string(rune('0'+n)), `{"amount":4900,"currency":"usd"}`))
		}
		return schema.AssistantMessage("Done.", nil)
	}}
}

// Without WithSession the tool does not run, and the harness says why on
// its Logger: one warning per refused call.
func TestNoScopeIsLogged(t *testing.T) {
	s := newShop(t)
	var log logLines
	h, err := agentonce.Open(context.Background(), journalPath(t), &agentonce.OpenOptions{Options: harness.Options{Logger: log.logger()}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	agent := newAgent(t, chargeTwice(), eino.New(h, keyed), chargeTool(t, s.URL, nil))
	msgs := []*schema.Message{schema.UserMessage("Charge me $49.")}
	if _, err := agent.Generate(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	if n := s.Downstream.TotalEffects(); n != 0 {
		t.Errorf("charges = %d; want 0", n)
	}
	var refused []string
	for _, l := range log.warnings() {
		if strings.Contains(l, "charge_card") {
			refused = append(refused, l)
		}
	}
	if len(refused) != 2 || !strings.Contains(refused[0], harness.ErrNoTurn.Error()) {
		t.Errorf("warnings = %q; want two, one per call, naming %q", refused, harness.ErrNoTurn)
	}
}

// A tool misspelt in Options.Tools: its first call says so once, naming
// the entry; the tool runs with the default kind, Unkeyed.
func TestMisspeltToolIsLogged(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tools map[string]harness.Tool
		want  string // the suggestion; "" for no warning
	}{
		{"transposed", map[string]harness.Tool{"charge_crad": {Effect: journal.Keyed}, "refund": {}}, "charge_crad"},
		{"another case", map[string]harness.Tool{"ChargeCard": {Effect: journal.Keyed}}, "ChargeCard"},
		{"closest of two", map[string]harness.Tool{"charge_cards": {}, "charge_cardz_x": {}}, "charge_cards"},
		{"listed", map[string]harness.Tool{"charge_card": {Effect: journal.Keyed}, "charge_carb": {}}, ""},
		{"far from every name", map[string]harness.Tool{"refund": {Effect: journal.Keyed}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log logLines
			var charges atomic.Int64
			charge, err := utils.InferTool("charge_card", "Charges the card.", func(context.Context, chargeInput) (string, error) {
				return fmt.Sprint("ch_", charges.Add(1)), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			h := openHarness(t, journalPath(t))
			a := eino.New(h, &eino.Options{Tools: tc.tools, Logger: log.logger()})
			agent := newAgent(t, chargeTwice(), a, charge)
			msgs := []*schema.Message{schema.UserMessage("Charge me $49.")}
			if _, err := agent.Generate(eino.WithSession(context.Background(), "conv-1", msgs), msgs); err != nil {
				t.Fatal(err)
			}
			if n := charges.Load(); n != 1 {
				t.Errorf("charges = %d; want 1 (the second call is answered from the journal)", n)
			}
			got := log.warnings()
			if tc.want == "" {
				if len(got) != 0 {
					t.Errorf("warnings = %q; want none", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0], "tool=charge_card") || !strings.Contains(got[0], `"did you mean"=`+tc.want) {
				t.Errorf("warnings = %q; want one for charge_card suggesting %s", got, tc.want)
			}
			for _, tl := range h.Tools() {
				if tl.Name == "charge_card" && tl.Effect != journal.Unkeyed {
					t.Errorf("charge_card registered as %v; want the default, Unkeyed", tl.Effect)
				}
			}
		})
	}
}
