package check

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentonce/agentonce/journal"
)

// The middleware's classes that say what Options.Reconcile did to a
// record (idempotency.ClassReconciled, ClassDidNotHappen).
const (
	classReconciled   = "reconciled"
	classDidNotHappen = "did-not-happen"
)

// ServerUnknowns counts, in ModeMiddleware, the server journal's records
// whose run ended without an answer (a server killed mid-request), and
// how many of them the middleware settled without a person, by asking the
// application (ServerOptions.Reconcile).
type ServerUnknowns struct {
	// Reconcile says whether the middleware had Options.Reconcile.
	Reconcile bool `json:"reconcile"`
	// Settled were settled by Reconcile: replayed as the effect it found,
	// or run again after two "did not happen" answers.
	Settled int `json:"settled"`
	// Unsettled are unknown or pending at the end: a person must look.
	Unsettled int `json:"unsettled"`
	// Happened and DidNotHappen count Reconcile's answers.
	Happened     int `json:"happened"`
	DidNotHappen int `json:"did_not_happen"`
}

// Unknowns is how many records were left without an answer.
func (s *ServerUnknowns) Unknowns() int { return s.Settled + s.Unsettled }

// Share is the part of the unknowns settled without a person, from 0 to
// 1; 1 when there were none.
func (s *ServerUnknowns) Share() float64 {
	if s.Unknowns() == 0 {
		return 1
	}
	return float64(s.Settled) / float64(s.Unknowns())
}

// String is the summary's line.
func (s *ServerUnknowns) String() string {
	how := "no Reconcile"
	if s.Reconcile {
		how = fmt.Sprintf("Reconcile answered happened %d, did not happen %d", s.Happened, s.DidNotHappen)
	}
	return fmt.Sprintf("server unknowns: %d, settled without a person %d (%.1f %%), left to a person %d; %s",
		s.Unknowns(), s.Settled, 100*s.Share(), s.Unsettled, how)
}

// reconciledWrongly says which of the server's Reconcile answers were not
// true to the effects before them under the same key, or "".
func (v *intentView) reconciledWrongly() string {
	var wrong []string
	for _, rc := range v.serverReconciles {
		var first *effectView
		for i, e := range v.effects {
			if e.ev.Key == rc.Key && e.ev.T < rc.T {
				first = &v.effects[i]
				break
			}
		}
		switch {
		case rc.Note == "happened" && first == nil:
			wrong = append(wrong, fmt.Sprintf("key %s: happened, with no effect before", rc.Key))
		case rc.Note == "happened" && !sameJSON(rc.Output, first.ev.Output):
			wrong = append(wrong, fmt.Sprintf("key %s: happened with %s; its first effect's output is %s", rc.Key, rc.Output, first.ev.Output))
		case rc.Note != "happened" && first != nil:
			wrong = append(wrong, fmt.Sprintf("key %s: did not happen, after effect %d", rc.Key, first.ev.Effect))
		}
	}
	return strings.Join(wrong, "; ")
}

// countServerUnknowns reads the server journal at the end of a run.
func countServerUnknowns(ctx context.Context, store journal.Store, reconcile bool, history []Event) (*ServerUnknowns, error) {
	s := &ServerUnknowns{Reconcile: reconcile}
	for rec, err := range store.List(ctx, journal.Filter{}) {
		if err != nil {
			return nil, fmt.Errorf("server journal: %w", err)
		}
		switch {
		case rec.State == journal.StateUnknown || rec.State == journal.StatePending:
			s.Unsettled++
		case rec.ErrorClass == classReconciled:
			s.Settled++
		default:
			for _, a := range rec.Attempts {
				if a.Class == classDidNotHappen {
					s.Settled++
					break
				}
			}
		}
	}
	for _, e := range history {
		if e.Ev == EvReconcile && e.Proc == "downstream" {
			if e.Note == "happened" {
				s.Happened++
			} else {
				s.DidNotHappen++
			}
		}
	}
	return s, nil
}
