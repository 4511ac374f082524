package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness/inspect"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

// approverStore is what the approver uses of a journal, as agentctl's
// approve and reject do: find the intent, decide, read it back.
type approverStore interface {
	List(ctx context.Context, f journal.Filter) iter.Seq2[journal.Record, error]
	Get(ctx context.Context, key uuid.UUID) (journal.Record, error)
	Resolve(ctx context.Context, key uuid.UUID, r journal.Resolution) (journal.Record, error)
}

// Decision outcomes (Event.Outcome of EvDecided).
const (
	// DecAccepted: the journal recorded the decision.
	DecAccepted = "accepted"
	// DecRefused: the journal refused it (journal.ErrInvalid or
	// ErrNotResolvable), or it was found not recorded after an error.
	DecRefused = "refused"
	// DecMaybe: the request failed midway (the process serving the
	// socket was killed) and the record could not be read back: it may
	// or may not have been recorded.
	DecMaybe = "maybe"
	// DecNotFound: the intent was not in the journal in time; nothing was
	// sent.
	DecNotFound = "not-found"
)

// approver makes the plan's decisions at their times, from the runner:
// on PostgreSQL and Redis through the journal, as agentctl approve does;
// on bbolt through the running worker's socket, as agentctl does while the
// agent runs. It records each decision and its result in the runner's history.
type approver struct {
	r *runner
	// open returns the journal to decide through and a function that
	// releases it.
	open func(ctx context.Context) (approverStore, func(), error)
	// closeAll releases what open kept open.
	closeAll func()
}

// newApprover returns the approver of the run's journal.
func (r *runner) newApprover() *approver {
	ap := &approver{r: r, closeAll: func() {}}
	if r.o.Store == "bolt" {
		sock := inspect.SocketPath(r.location("approver"))
		ap.open = func(ctx context.Context) (approverStore, func(), error) {
			cl, err := inspect.Dial(ctx, sock)
			if err != nil {
				return nil, nil, err
			}
			return cl, func() { cl.Close() }, nil
		}
		return ap
	}
	// One store for the run, opened at the first decision (the workers
	// have made the schema by then). A PostgreSQL backend of it is not the
	// terminator's: its application name is not under the run's prefix.
	var mu sync.Mutex
	var st journal.Store
	ap.open = func(ctx context.Context) (approverStore, func(), error) {
		mu.Lock()
		defer mu.Unlock()
		if st == nil {
			s, err := journal.Open(ctx, r.approverLocation(), nil)
			if err != nil {
				return nil, nil, err
			}
			st = s
		}
		return st, func() {}, nil
	}
	ap.closeAll = func() {
		mu.Lock()
		defer mu.Unlock()
		if st != nil {
			st.Close()
		}
	}
	return ap
}

// approverLocation is the journal's location for the approver: on
// PostgreSQL under an application name the terminator leaves alone.
func (r *runner) approverLocation() string {
	if r.schema == "" {
		return r.location("approver")
	}
	u, _ := url.Parse(r.location("approver"))
	q := u.Query()
	q.Set("application_name", r.schema+"-approver")
	u.RawQuery = q.Encode()
	return u.String()
}

// run makes every decision of the plan at its time, and returns when all
// are made.
func (ap *approver) run(ctx context.Context) {
	defer ap.closeAll()
	epoch := time.Unix(0, ap.r.plan.Epoch)
	var wg sync.WaitGroup
	for i := range ap.r.plan.Intents {
		in := &ap.r.plan.Intents[i]
		for _, d := range in.Decisions {
			at := epoch.Add(time.Duration(in.AtMS+d.AfterMS) * time.Millisecond)
			wg.Go(func() {
				time.Sleep(time.Until(at))
				ap.decide(ctx, in, d)
			})
		}
	}
	wg.Wait()
}

// findFor is how long the approver looks for an intent in the journal (its
// first call may come late: a worker restarting).
const findFor = 1500 * time.Millisecond

// decide finds the intent awaiting in the journal, makes decision d about
// it and records both.
func (ap *approver) decide(ctx context.Context, in *Intent, d Decision) {
	base := Event{Ev: EvDecided, Intent: in.ID, By: d.By, Note: d.Do}
	rec, ok := ap.find(ctx, in)
	if !ok {
		base.Outcome = DecNotFound
		ap.r.log.Add(base)
		return
	}
	base.Key = rec.Key.String()
	res := journal.Resolution{State: journal.StatePending, By: d.By, Reason: "agentcheck: " + d.Do, Fingerprint: rec.Fingerprint}
	switch d.Do {
	case DoReject:
		res.State, res.Fingerprint = journal.StateSuppressed, keyderive.Fingerprint{}
	case DoForge:
		res.Fingerprint = otherInput(in)
	}
	start := base
	start.Ev = EvDecide
	ap.r.log.Add(start)
	err := ap.resolve(ctx, rec.Key, res)
	switch {
	case err == nil:
		base.Outcome = DecAccepted
	case errors.Is(err, errNotSent), errors.Is(err, journal.ErrInvalid), errors.Is(err, journal.ErrNotResolvable):
		base.Outcome, base.Err = DecRefused, err.Error()
	default:
		base.Outcome, base.Err = ap.confirm(ctx, rec.Key, d), err.Error()
	}
	ap.r.log.Add(base)
}

// find returns the intent's record, looking for up to findFor.
func (ap *approver) find(ctx context.Context, in *Intent) (journal.Record, bool) {
	f := journal.Filter{Tenant: checkTenant, Session: sessionOf(ap.r.plan), Turn: in.ID, Tool: in.Tool}
	for deadline := time.Now().Add(findFor); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		st, done, err := ap.open(ctx)
		if err != nil {
			continue
		}
		for rec, err := range st.List(ctx, f) {
			if err == nil && rec.Approval != nil {
				done()
				return rec, true
			}
			break
		}
		done()
	}
	return journal.Record{}, false
}

// errNotSent is resolve's error when no agent took the decision.
var errNotSent = errors.New("decision not sent")

// resolve sends the decision once. An agent that is not there (between a
// kill and its restart) has been sent nothing: it is asked again, until
// findFor has passed.
func (ap *approver) resolve(ctx context.Context, key uuid.UUID, res journal.Resolution) error {
	for deadline := time.Now().Add(findFor); ; time.Sleep(50 * time.Millisecond) {
		st, done, err := ap.open(ctx)
		if err != nil {
			if time.Now().Before(deadline) {
				continue
			}
			return fmt.Errorf("%w: %v", errNotSent, err)
		}
		_, err = st.Resolve(ctx, key, res)
		done()
		return err
	}
}

// confirm reads the record back after a decision whose answer was lost,
// and says whether the journal has it.
func (ap *approver) confirm(ctx context.Context, key uuid.UUID, d Decision) string {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		st, done, err := ap.open(ctx)
		if err != nil {
			continue
		}
		rec, err := st.Get(ctx, key)
		done()
		if err != nil {
			continue
		}
		if recorded(&rec, d) {
			return DecAccepted
		}
		return DecRefused
	}
	return DecMaybe
}

// recorded reports whether rec holds decision d.
func recorded(rec *journal.Record, d Decision) bool {
	if d.Do == DoReject {
		return rec.Resolution != nil && rec.Resolution.By == d.By
	}
	if rec.Approval == nil {
		return false
	}
	for _, g := range rec.Approval.Given {
		if g.By == d.By {
			return true
		}
	}
	return false
}

// otherInput is the fingerprint of another input of in's tool: the
// payload the intent was not called with.
func otherInput(in *Intent) keyderive.Fingerprint {
	raw, _ := json.Marshal(body{Intent: in.ID, P: in.Payloads})
	canonical, err := keyderive.Canonicalize(raw, nil)
	if err != nil {
		canonical = raw
	}
	return keyderive.FingerprintOf(canonical)
}
