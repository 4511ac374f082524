package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
)

// Error classes of the records Options.Reconcile settles (succeeded) or
// leaves unknown (after one "did not happen", or a "cannot tell").
const (
	ClassReconciled   = "reconciled"
	ClassDidNotHappen = "did-not-happen"
	ClassCannotTell   = "cannot-tell"
)

// reconciles reports whether Options.Reconcile is asked about rec.
func (m *Middleware) reconciles(rec *journal.Record) bool {
	return m.o.Reconcile != nil && rec.State == journal.StateUnknown
}

// step is reissue.Request's step for rec at now, or reissue.Of's for an
// Unkeyed intent when the application reconciles it.
func (m *Middleware) step(rec *journal.Record, now time.Time) reissue.Step {
	if m.reconciles(rec) {
		return reissue.Of(rec, journal.Unkeyed, now)
	}
	return reissue.Request(rec, now, m.o.TTL)
}

// reconcile asks Options.Reconcile about the key whose record rec this
// request took over (token), and records the verdict fenced. A first "did
// not happen" is kept as an attempt closed ClassDidNotHappen, quiet Settle
// later; a second one then runs the request again.
func (m *Middleware) reconcile(w http.ResponseWriter, r *http.Request, next http.Handler, c *call, token uint64, rec *journal.Record) {
	bg := context.WithoutCancel(r.Context())
	v := m.askReconcile(r, c, token)
	out, happened := v.Happened()
	why := v.Why()
	done := journal.Completion{Key: c.jkey, Token: token, State: journal.StateUnknown, ErrorClass: ClassCannotTell}
	switch {
	case happened:
		if why = checkReconciled(out, m.o.MaxStoredBytes); why == nil {
			done.State, done.Output, done.ErrorClass = journal.StateSucceeded, out, ClassReconciled
			done.ErrorMessage = "Options.Reconcile found the request's effect"
			break
		}
		why = fmt.Errorf("its answer is refused: %w", why)
		m.o.ErrorLog("idempotency: key %s (%s): Options.Reconcile said it happened, but %v", c.jkey, c.tool, why)
	case v.DidNotHappen() && lastClass(rec) == ClassDidNotHappen:
		m.runAgain(w, r, next, c, token) // twice, Settle apart
		return
	case v.DidNotHappen():
		done.ErrorClass = ClassDidNotHappen
		done.ErrorMessage = "Options.Reconcile said it did not happen; the request runs again if it says so again " + m.settle.String() + " later"
	}
	var err error
	if done.ErrorClass == ClassCannotTell {
		if why == nil {
			why = errors.New("no reason given")
		}
		done.ErrorMessage = "Options.Reconcile cannot tell: " + why.Error()
	} else {
		// A verdict is an attempt of its own, the check.
		err = m.store.StartAttempt(bg, journal.AttemptRequest{Key: c.jkey, Token: token, ID: c.req.AttemptID,
			PrevClass: ClassCrashed, PrevError: "the server stopped while the handler ran",
			LeaseTTL: m.o.LeaseTTL, Settle: m.settle})
	}
	var got journal.Record
	if err == nil {
		got, err = m.store.Complete(bg, done)
	}
	switch {
	case err != nil: // the key stays held until the lease ends, then is asked about again
		writeProblem(w, http.StatusServiceUnavailable, ProblemJournal, problem{Detail: "the verdict of Options.Reconcile could not be recorded (" +
			err.Error() + "); retry", Key: c.key, JournalKey: c.jkey.String()}, m.o.LeaseTTL)
	case got.State == journal.StateSucceeded:
		m.answers.put(&got, time.Now())
		m.answer(w, c, &got)
	case got.ErrorClass == ClassDidNotHappen:
		m.answerChecked(w, c, reissue.QuietAt(&got), "the application found no effect of the first request with this key")
	default: // a person must settle it, as OnUnknown is told
		m.unknown(bg, got)
		m.answerUnknown(w, c, "the first request with this key ended without a recorded answer ("+done.ErrorMessage+")")
	}
}

// askReconcile asks Options.Reconcile, renewing the lease; a panic is a
// "cannot tell".
func (m *Middleware) askReconcile(r *http.Request, c *call, token uint64) (v downstream.Reconciliation) {
	ctx, stop := keepLease(r.Context(), m.store, c.jkey, token, m.o.LeaseTTL)
	defer stop()
	defer func() {
		if p := recover(); p != nil {
			v = downstream.CannotTell(fmt.Errorf("Options.Reconcile panicked: %v", p))
		}
	}()
	defer c.body.Seek(0, io.SeekStart) // for the handler, should it run
	return m.o.Reconcile(r.WithContext(ctx), c.key)
}

// lastClass is the class of rec's last attempt.
func lastClass(rec *journal.Record) string {
	if n := len(rec.Attempts); n > 0 {
		return rec.Attempts[n-1].Class
	}
	return ""
}

// checkReconciled says why a Reconcile's "happened" out cannot be replayed.
func checkReconciled(out []byte, max int) error {
	var e envelope
	err := parseEnvelope(out, &e)
	switch {
	case len(out) == 0:
		return errors.New("it holds no answer: give ResolvedResponse's, or a JSON body")
	case len(out) > max:
		return fmt.Errorf("it is %d bytes, over MaxStoredBytes (%d)", len(out), max)
	case errors.Is(err, errNotEnvelope):
		if !json.Valid(out) {
			return fmt.Errorf("it (%d bytes) is neither ResolvedResponse's answer nor JSON", len(out))
		}
		return nil
	case err != nil:
		return err
	case !e.inline || sha256.Sum256(e.body) != e.sum:
		return errors.New("stored response: its body is not inline or does not match its sha256 (ResolvedResponse makes one that is)")
	case e.status < 200 || e.status > 599:
		return fmt.Errorf("stored response: status %d is not a final HTTP status", e.status)
	}
	return nil
}

// answerChecked answers that c's outcome is checked from at: retry then.
func (m *Middleware) answerChecked(w http.ResponseWriter, c *call, at time.Time, detail string) {
	writeProblem(w, http.StatusConflict, ProblemInFlight, problem{Detail: detail + "; it is checked with the application from " +
		at.UTC().Format(time.RFC3339), Key: c.key, JournalKey: c.jkey.String()}, max(time.Until(at), m.o.RetryAfter))
}
