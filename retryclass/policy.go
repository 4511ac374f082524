package retryclass

import (
	"cmp"
	"context"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Defaults of Policy's fields.
const (
	DefaultMaxAttempts     = 5
	DefaultMaxElapsed      = 30 * time.Second
	DefaultInitialInterval = 500 * time.Millisecond
	DefaultMaxInterval     = 5 * time.Second
	DefaultMultiplier      = 1.5
	DefaultJitter          = 0.5
	DefaultInFlightBudget  = 10 * time.Second
	DefaultMaxRetryAfter   = 10 * time.Second
)

// Policy says how one call retries. A nil *Policy means the defaults, and
// each field's zero value is its default. This package never writes a
// Policy: one may be shared by many goroutines.
type Policy struct {
	// MaxAttempts is the number of tries, counting the first (1 means no
	// retry); in-flight polls do not count. Zero means 5; negative means no
	// limit but the elapsed budget.
	MaxAttempts int

	// MaxElapsed bounds the time from NewSchedule to the start of the last
	// try: Next stops rather than wait past it. Zero means 30s; negative
	// means no limit but MaxAttempts and the caller's deadline.
	MaxElapsed time.Duration

	// InitialInterval is the first backoff wait, before jitter. Zero means
	// 500ms; negative means no wait at all (every backoff step is 0).
	InitialInterval time.Duration

	// MaxInterval caps the backoff wait before jitter. Zero means 5s; a
	// value below InitialInterval is taken as InitialInterval.
	MaxInterval time.Duration

	// Multiplier grows the wait after each retry. Zero means 1.5; values
	// below 1 are taken as 1 (a constant wait).
	Multiplier float64

	// Jitter is the randomization factor: each wait is drawn uniformly from
	// [w*(1-Jitter), w*(1+Jitter)]. Zero means 0.5; negative means no
	// jitter; values above 1 are taken as 1.
	Jitter float64

	// InFlightBudget is the total time Next waits across InFlight (409)
	// verdicts before it stops. Zero means 10s; negative means none.
	InFlightBudget time.Duration

	// MaxRetryAfter caps an honoured Retry-After. Zero means 10s; negative
	// means Retry-After is ignored for the backoff wait.
	MaxRetryAfter time.Duration

	// Classify overrides classification for one tool (a server's 503 as
	// NotExecuted, say); Policy.Verdict calls it. Nil means ClassifyContext.
	Classify func(callerCtx context.Context, err error) Verdict

	// Budget, if set, limits retries across every Schedule that shares it.
	// Nil means no shared limit.
	Budget *Budget
}

// Verdict classifies err with p.Classify, or ClassifyContext when p or
// p.Classify is nil.
func (p *Policy) Verdict(callerCtx context.Context, err error) Verdict {
	if p != nil && p.Classify != nil {
		return p.Classify(callerCtx, err)
	}
	return ClassifyContext(callerCtx, err)
}

// NewSchedule starts the retry state of one call. Its elapsed-time budget
// starts now. A nil p means the defaults.
func (p *Policy) NewSchedule() *Schedule {
	var q Policy
	if p != nil {
		q = *p
	}
	mult := max(cmp.Or(q.Multiplier, DefaultMultiplier), 1)
	jitter := max(min(cmp.Or(q.Jitter, DefaultJitter), 1), 0)
	s := &Schedule{backoff: backoff.ExponentialBackOff{
		InitialInterval:     cmp.Or(q.InitialInterval, DefaultInitialInterval),
		RandomizationFactor: jitter,
		Multiplier:          mult,
		MaxInterval:         cmp.Or(q.MaxInterval, DefaultMaxInterval),
		MaxElapsedTime:      0, // Schedule applies the elapsed budget itself, Retry-After included
		Stop:                backoff.Stop,
		Clock:               backoff.SystemClock,
	}}
	b := &s.backoff
	b.InitialInterval = max(b.InitialInterval, 0)
	b.MaxInterval = max(b.MaxInterval, b.InitialInterval)
	b.Reset()
	s.set = Policy{
		MaxAttempts:    cmp.Or(q.MaxAttempts, DefaultMaxAttempts),
		MaxElapsed:     cmp.Or(q.MaxElapsed, DefaultMaxElapsed),
		InFlightBudget: cmp.Or(q.InFlightBudget, DefaultInFlightBudget),
		MaxRetryAfter:  cmp.Or(q.MaxRetryAfter, DefaultMaxRetryAfter),
		Budget:         q.Budget,
	}
	s.start = time.Now()
	s.tries = 1
	s.set.Budget.request(s.start)
	return s
}

// Schedule is the retry state of one call. It is not safe for concurrent
// use; one call owns it.
type Schedule struct {
	set     Policy                     // the limits, defaults applied
	backoff backoff.ExponentialBackOff // by value: one allocation per call, not two
	start   time.Time

	tries         int           // tries allowed so far, the first included
	inFlightTries int           // of which were allowed after an InFlight verdict
	inFlightWait  time.Duration // total delay handed out for InFlight verdicts
	lastStop      StopReason
}

// StopReason says why Next returned ok=false.
type StopReason uint8

const (
	// NotStopped: Next has not stopped the schedule.
	NotStopped StopReason = iota
	// StopClass: the verdict's class is not retryable.
	StopClass
	// StopAttempts: MaxAttempts tries were made.
	StopAttempts
	// StopElapsed: the wait would end past MaxElapsed.
	StopElapsed
	// StopInFlight: the in-flight budget is spent.
	StopInFlight
	// StopDeadline: the context is done, or the wait would end at or past
	// its deadline.
	StopDeadline
	// StopBudget: the shared retry Budget is exhausted.
	StopBudget
)

var stopNames = [...]string{"not-stopped", "class", "attempts", "elapsed", "in-flight", "deadline", "budget"}

// String returns the reason's lower-case name.
func (r StopReason) String() string {
	if int(r) < len(stopNames) {
		return stopNames[r]
	}
	return "stop-reason(" + strconv.Itoa(int(r)) + ")"
}

// Next is called after a failed try classified as v. It returns how long
// to wait before the next try, or ok=false to stop at the first limit met
// (the Stop reasons list them; StopReason tells which).
//
// The wait is v.RetryAfter capped at MaxRetryAfter when v carries one,
// otherwise the next exponential, jittered backoff step. For InFlight the
// wait is also cut to what is left of the in-flight budget. When ok is true
// the next try is counted in Attempts.
func (s *Schedule) Next(ctx context.Context, v Verdict) (delay time.Duration, ok bool) {
	if !v.Class.Retryable() {
		return s.stop(StopClass)
	}
	if ctx.Err() != nil {
		return s.stop(StopDeadline)
	}
	inFlight := v.Class == InFlight
	if !inFlight && s.set.MaxAttempts > 0 && s.tries-s.inFlightTries >= s.set.MaxAttempts {
		return s.stop(StopAttempts)
	}

	delay = s.backoff.NextBackOff() // advance the sequence even when Retry-After wins
	if v.RetryAfter > 0 && s.set.MaxRetryAfter >= 0 {
		delay = min(v.RetryAfter, s.set.MaxRetryAfter)
	}
	if inFlight {
		left := s.set.InFlightBudget - s.inFlightWait
		if s.set.InFlightBudget < 0 || left <= 0 {
			return s.stop(StopInFlight)
		}
		delay = min(delay, left)
	}

	now := time.Now()
	if s.set.MaxElapsed > 0 && now.Sub(s.start)+delay > s.set.MaxElapsed {
		return s.stop(StopElapsed)
	}
	if dl, has := ctx.Deadline(); has && !now.Add(delay).Before(dl) {
		return s.stop(StopDeadline) // the next try could not even start in time
	}
	if !s.set.Budget.withdraw(now) {
		return s.stop(StopBudget)
	}

	s.tries++
	if inFlight {
		s.inFlightTries++
		s.inFlightWait += delay
	}
	s.lastStop = NotStopped
	return delay, true
}

func (s *Schedule) stop(r StopReason) (time.Duration, bool) {
	s.lastStop = r
	return 0, false
}

// Attempts reports how many attempts the schedule has allowed: 1 for the
// first, plus one for each Next that returned ok (in-flight polls too).
func (s *Schedule) Attempts() int { return s.tries }

// Elapsed reports the time since NewSchedule.
func (s *Schedule) Elapsed() time.Duration { return time.Since(s.start) }

// StopReason reports why the last Next returned ok=false, or NotStopped.
func (s *Schedule) StopReason() StopReason { return s.lastStop }

// Wait sleeps for d, or returns ctx.Err() as soon as ctx is done. A d of
// zero or less returns at once with ctx.Err().
func Wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
