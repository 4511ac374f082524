package check

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
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
	// Unsettled are unknown or pending at the end, although a request
	// with their key reached the middleware once Reconcile could be asked
	// (after the kill that cut their run short, the dead owner's lease and
	// the run's settle window): it could have settled them, a person must.
	Unsettled int `json:"unsettled"`
	// NotAsked are unknown or pending at the end, and no request with
	// their key reached the middleware once Reconcile could be asked (the
	// client had given up): a person finds them in the queue.
	NotAsked int `json:"not_asked"`
	// Happened and DidNotHappen count Reconcile's answers.
	Happened     int `json:"happened"`
	DidNotHappen int `json:"did_not_happen"`
}

// Unknowns is how many records were left without an answer and asked
// about again: those Reconcile could answer.
func (s *ServerUnknowns) Unknowns() int { return s.Settled + s.Unsettled }

// Share is the part of the unknowns asked about again that were settled
// without a person, from 0 to 1; 1 when there were none.
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
	return fmt.Sprintf("server unknowns asked about again: %d, settled without a person %d (%.1f %%), left to a person %d; never asked again %d; %s",
		s.Unknowns(), s.Settled, 100*s.Share(), s.Unsettled, s.NotAsked, how)
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
	var kills []int64
	seen := map[string][]int64{} // the middleware's answers by key
	for _, e := range history {
		switch {
		case e.Ev == EvProc && e.Subject == "downstream" && strings.HasPrefix(e.Note, "kill"):
			kills = append(kills, e.T)
		case e.Ev == EvResponse && e.Proc == "downstream" && !strings.Contains(e.Note, "before the middleware"):
			seen[e.Key] = append(seen[e.Key], e.T)
		case e.Ev == EvReconcile && e.Proc == "downstream" && e.Note == "happened":
			s.Happened++
		case e.Ev == EvReconcile && e.Proc == "downstream":
			s.DidNotHappen++
		}
	}
	for rec, err := range store.List(ctx, journal.Filter{}) {
		if err != nil {
			return nil, fmt.Errorf("server journal: %w", err)
		}
		switch {
		case rec.State == journal.StateUnknown || rec.State == journal.StatePending:
			// The middleware keeps a request's key as its record's session.
			if askedAgain(&rec, kills, seen[rec.Intent.Session]) {
				s.Unsettled++
			} else {
				s.NotAsked++
			}
		case rec.ErrorClass == idempotency.ClassReconciled:
			s.Settled++
		default:
			for _, a := range rec.Attempts {
				if a.Class == idempotency.ClassDidNotHappen {
					s.Settled++
					break
				}
			}
		}
	}
	return s, nil
}

// askedAgain reports whether the middleware answered a request with rec's
// key once Reconcile could be asked about it: after the first server kill
// after its last attempt began, the dead owner's lease and the attempt's
// settle window (the run may still be landing until then, and the key is
// held).
func askedAgain(rec *journal.Record, kills, answered []int64) bool {
	if len(rec.Attempts) == 0 {
		return false
	}
	last := rec.Attempts[len(rec.Attempts)-1]
	i := slices.IndexFunc(kills, func(k int64) bool { return k >= last.Start.UnixNano() })
	if i < 0 {
		return false
	}
	from := kills[i]
	if rec.State == journal.StatePending {
		from = max(from, rec.Lease.Expires.UnixNano())
	}
	if !last.QuietAt.IsZero() {
		from = max(from, last.QuietAt.UnixNano())
	}
	return slices.ContainsFunc(answered, func(t int64) bool { return t > from })
}
