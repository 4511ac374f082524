package idempotency

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/reissue"
)

// decide carries out what Begin decided for the request; a record to run
// again or reconcile is asked for by a second Begin with a Retake.
func (m *Middleware) decide(w http.ResponseWriter, r *http.Request, next http.Handler, c *call) {
	ctx := r.Context()
	req := &c.req
	if req.AttemptID == "" {
		req.AttemptID = uuid.NewString()
	}
	deadline := time.Now().Add(m.o.Wait)
	pause := 5 * time.Millisecond
	var retaken reissue.Step // set by req.Retake during the Begin that follows
	for {
		retaken = 0
		res, err := m.store.Begin(ctx, *req)
		if err != nil {
			m.notRun(w, c, err)
			return
		}
		if m.seen != nil && res.Outcome != journal.Mismatch && res.Outcome != journal.Guarded {
			m.seen.add(c.jkey) // its next request is likely a retry
		}
		switch res.Outcome {
		case journal.Started:
			m.run(w, r, next, c, res.Token)
			return
		case journal.TakenOver:
			switch {
			// Under InTx a dead process's writes were rolled back.
			case retaken == reissue.Retry || m.inTx != nil || len(res.Record.Attempts) == 0 && res.Record.Approval != nil:
				m.runAgain(w, r, next, c, res.Token)
			case m.o.Reconcile != nil: // an unknown outcome, or a dead process's
				m.reconcile(w, r, next, c, res.Token, &res.Record)
			default:
				m.abandon(ctx, c, res.Token)
				m.answerUnknown(w, c, "the server stopped while handling the first request with this key; whether it took effect is unknown")
			}
			return
		case journal.Answered:
			if s := m.step(&res.Record, time.Now()); req.Retake == nil && (s == reissue.Retry || s == reissue.Reconcile) {
				// Begin again with a Retake: rare, so a replay does not pay for it.
				req.Retake = func(rec *journal.Record) bool {
					s := m.step(rec, time.Now())
					if s == reissue.Retry || s == reissue.Reconcile {
						retaken = s
						return true
					}
					return false
				}
				continue
			}
			m.answers.put(&res.Record, time.Now())
			m.answer(w, c, &res.Record)
			return
		case journal.Mismatch, journal.Guarded:
			writeProblem(w, http.StatusUnprocessableEntity, ProblemKeyReused, problem{
				Detail: "this key was first used with a different request body, path or query", Key: c.key,
				JournalKey: c.jkey.String()}, 0)
			return
		}
		// Held: running, or awaiting approval (which no wait would end).
		if m.answerApproval(w, c, &res.Record) {
			return
		}
		if m.o.Wait <= 0 || !time.Now().Add(pause).Before(deadline) {
			writeProblem(w, http.StatusConflict, ProblemInFlight, problem{
				Detail: "retry after the first request has been answered", Key: c.key}, m.o.RetryAfter)
			return
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}

// runAgain runs the handler for a record taken over, as an attempt of its
// own; if that cannot be recorded, it releases the record (503).
func (m *Middleware) runAgain(w http.ResponseWriter, r *http.Request, next http.Handler, c *call, token uint64) {
	ctx := r.Context()
	err := m.store.StartAttempt(ctx, journal.AttemptRequest{Key: c.jkey, Token: token, ID: c.req.AttemptID,
		PrevClass: ClassCrashed, PrevError: "the server stopped while the handler ran; its writes were rolled back",
		LeaseTTL: m.o.LeaseTTL, Settle: c.req.Settle, Durable: c.req.Durable})
	if err != nil {
		if _, cerr := m.store.Complete(context.WithoutCancel(ctx), journal.Completion{Key: c.jkey, Token: token,
			State: journal.StateFailed, ErrorClass: ClassReleased, ErrorMessage: "not run: " + err.Error()}); cerr != nil {
			m.o.ErrorLog("idempotency: key %s (%s): releasing a run that could not start: %v", c.jkey, c.tool, cerr)
		}
		m.notRun(w, c, err)
		return
	}
	m.run(w, r, next, c, token)
}

// notRun answers 503: the journal failed before the handler ran.
func (m *Middleware) notRun(w http.ResponseWriter, c *call, err error) {
	writeProblem(w, http.StatusServiceUnavailable, ProblemJournal,
		problem{Detail: "the request was not run: " + err.Error(), Key: c.key}, m.o.RetryAfter)
}

// abandon settles a record whose owner died mid-request as unknown.
func (m *Middleware) abandon(ctx context.Context, c *call, token uint64) {
	rec, err := m.store.Complete(context.WithoutCancel(ctx), journal.Completion{Key: c.jkey, Token: token,
		State: journal.StateUnknown, ErrorClass: ClassCrashed,
		ErrorMessage: "the server stopped while the handler ran (its lease expired); resolve with agentctl after checking the effect"})
	if err != nil {
		m.o.ErrorLog("idempotency: key %s (%s): recording an unknown outcome: %v", c.jkey, c.tool, err)
		return
	}
	m.unknown(ctx, rec)
}

// unknown tells ErrorLog and Options.OnUnknown of rec, settled unknown.
func (m *Middleware) unknown(ctx context.Context, rec journal.Record) {
	m.o.ErrorLog("idempotency: key %s (%s): outcome unknown (%s); after checking its effect: agentctl resolve %s",
		rec.Key, rec.Intent.Tool, rec.ErrorMessage, rec.Key)
	if m.o.OnUnknown != nil {
		m.o.OnUnknown(ctx, rec)
	}
}

// errRelease makes CompleteWith roll back a handler's writes.
var errRelease = errors.New("idempotency: handler's writes rolled back")

// run runs the handler for a key this process now owns, records its
// response and then sends it. A panic (or runtime.Goexit) settles the
// record unknown (under InTx, released) and is re-raised.
func (m *Middleware) run(w http.ResponseWriter, r *http.Request, next http.Handler, c *call, token uint64) {
	// A client that goes away cancels nothing: its retry finds the answer.
	bg := context.WithoutCancel(r.Context())
	ctx, stop := keepLease(bg, m.store, c.jkey, token, m.o.LeaseTTL)
	defer stop()
	cw := newCapture(m.o.MaxResponseBytes)
	done := false
	defer func() {
		if done {
			return
		}
		v := recover()
		msg := fmt.Sprintf("the handler panicked: %v", v)
		if v == nil {
			msg = "the handler exited (runtime.Goexit) without answering"
		}
		st, class := journal.StateUnknown, ClassPanic
		if m.inTx != nil {
			st, class = journal.StateFailed, ClassReleased
		}
		if rec, err := m.store.Complete(bg, journal.Completion{Key: c.jkey, Token: token,
			State: st, ErrorClass: class, ErrorMessage: msg}); err != nil {
			m.o.ErrorLog("idempotency: key %s (%s): recording the handler's panic: %v", c.jkey, c.tool, err)
		} else if st == journal.StateUnknown {
			m.unknown(bg, rec)
		}
		if v != nil {
			panic(v)
		}
	}()

	var resp *response
	var err, recErr error
	if m.inTx != nil {
		_, err = m.inTx.CompleteWith(ctx, c.jkey, token, func(tctx context.Context) ([]byte, error) {
			next.ServeHTTP(cw, r.WithContext(tctx))
			if resp, recErr = m.record(tctx, c, cw); recErr != nil {
				return nil, fmt.Errorf("%w: %w", errRelease, recErr)
			}
			if m.released(resp) {
				return nil, errRelease
			}
			return resp.output, nil
		})
		done = true
		if errors.Is(err, errRelease) {
			err = m.release(bg, c, token, resp)
		}
	} else {
		next.ServeHTTP(cw, r.WithContext(ctx))
		done = true
		stop() // no renewal may race the outcome
		err = m.complete(bg, c, token, cw, &resp)
	}
	if err == nil && resp == nil { // InTx: the response could not be recorded, the writes rolled back
		err = fmt.Errorf("%w; the handler's writes were rolled back and the next request runs again", recErr)
	}
	if err != nil {
		m.o.ErrorLog("idempotency: key %s (%s): %v", c.jkey, c.tool, err)
		writeProblem(w, http.StatusInternalServerError, ProblemNotRecorded, problem{
			Detail: "the handler ran but its response could not be recorded (" + err.Error() +
				"); the key's outcome is for an operator to resolve", Key: c.key, JournalKey: c.jkey.String()}, 0)
		return
	}
	// The first answer carries every header the handler set.
	h := w.Header()
	for k, v := range cw.header {
		h[k] = v
	}
	resp.write(w, "")
}

// record builds the response to store from what the handler wrote, a body
// over MaxStoredBytes in the blob store (without one, its hash only).
func (m *Middleware) record(ctx context.Context, c *call, cw *capture) (*response, error) {
	if cw.err != nil {
		return nil, cw.err
	}
	resp := &response{Status: cw.status, Header: http.Header{}, Body: cw.body.Bytes()}
	if resp.Status == 0 {
		resp.Status = http.StatusOK
	}
	for _, name := range m.o.StoredHeaders {
		if v := cw.header.Values(name); len(v) > 0 {
			resp.Header[http.CanonicalHeaderKey(name)] = v
		}
	}
	resp.Sum = sha256.Sum256(resp.Body)
	inline := len(resp.Body) <= m.o.MaxStoredBytes
	if !inline && m.o.Blobs == nil && !m.released(resp) {
		m.o.ErrorLog("idempotency: key %s (%s): the response body is %d bytes, over MaxStoredBytes (%d), and Options.Blobs is nil: "+
			"only its SHA-256 is kept, and a retry will get 500 %s", c.jkey, c.tool, len(resp.Body), m.o.MaxStoredBytes, ProblemBodyUnavailable)
	}
	if !inline && m.o.Blobs != nil && !m.released(resp) {
		ref, err := m.o.Blobs.Put(ctx, resp.Sum, resp.Body)
		if err == nil && (ref == "" || strings.ContainsAny(ref, " =\t\r\n")) {
			err = fmt.Errorf("blob store returned the reference %q: it must be non-empty, without spaces, '=' or newlines", ref)
		}
		if err != nil {
			return nil, err
		}
		resp.Blob = ref
	}
	resp.output = resp.encode(inline)
	return resp, nil
}

// released reports whether resp is a 5xx the middleware does not store.
func (m *Middleware) released(resp *response) bool {
	return resp.Status >= 500 && !m.o.StoreServerErrors
}

// complete records the handler's response outside a transaction.
func (m *Middleware) complete(ctx context.Context, c *call, token uint64, cw *capture, out **response) error {
	resp, err := m.record(ctx, c, cw)
	if err != nil {
		class := ClassTooLarge
		if !errors.Is(err, ErrResponseTooLarge) {
			class = "blob"
		}
		rec, cerr := m.store.Complete(ctx, journal.Completion{Key: c.jkey, Token: token,
			State: journal.StateUnknown, ErrorClass: class, ErrorMessage: err.Error()})
		if cerr == nil {
			m.unknown(ctx, rec)
		}
		return errors.Join(err, cerr)
	}
	*out = resp
	if m.released(resp) {
		return m.release(ctx, c, token, resp)
	}
	rec, err := m.store.Complete(ctx, journal.Completion{Key: c.jkey, Token: token,
		State: journal.StateSucceeded, Output: resp.output})
	if err == nil {
		m.answers.put(&rec, time.Now())
	}
	return err
}

// release settles a 5xx as failed-released: the next request runs again.
func (m *Middleware) release(ctx context.Context, c *call, token uint64, resp *response) error {
	msg := "the handler answered a server error; nothing is stored and the next request runs again"
	if resp != nil {
		msg = fmt.Sprintf("the handler answered %d; nothing is stored and the next request runs again", resp.Status)
	}
	_, err := m.store.Complete(ctx, journal.Completion{Key: c.jkey, Token: token,
		State: journal.StateFailed, ErrorClass: ClassReleased, ErrorMessage: msg})
	return err
}
