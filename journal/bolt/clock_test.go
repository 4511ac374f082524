package bolt_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/internal/journaltest"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/keyderive"
)

// Issue 23, item 2: a jump of the wall clock re-ran a settled Unkeyed
// intent. +8 days, and its 7-day TTL had "passed"; -8 days, a call, the
// clock corrected, and the record written with times 8 days in the past
// looked expired. No real time passed in either. The store's time now
// moves with the monotonic clock (clock.go); journaltest.Clock's Jump
// moves the wall clock alone, as setting a host's clock does.

const eightDays = 8 * 24 * time.Hour

// jumpJournal is a bbolt journal on a journaltest.Clock, reopened at will
// as a restarted agent reopens it.
type jumpJournal struct {
	t     *testing.T
	path  string
	clk   *journaltest.Clock
	epoch atomic.Pointer[uuid.UUID] // the monotonic clock's epoch: a new one is a reboot
	st    *bolt.Store
}

func newJumpJournal(t *testing.T) *jumpJournal {
	j := &jumpJournal{t: t, path: filepath.Join(t.TempDir(), "agent.journal"), clk: &journaltest.Clock{}}
	e := journaltest.ClockEpoch
	j.epoch.Store(&e)
	j.open()
	t.Cleanup(func() {
		if j.st != nil {
			j.st.Close()
		}
	})
	return j
}

func (j *jumpJournal) open() {
	j.t.Helper()
	mono := func() (uuid.UUID, time.Duration) {
		_, d := j.clk.Monotonic()
		return *j.epoch.Load(), d
	}
	j.st = mustOpen(j.t, j.path, &bolt.Options{Journal: journal.Options{Now: j.clk.Now, Monotonic: mono}})
}

// restart closes the journal and opens it again, a second of real time
// later; with reboot, in a new epoch of the monotonic clock.
func (j *jumpJournal) restart(reboot bool) {
	j.t.Helper()
	if err := j.st.Close(); err != nil {
		j.t.Fatal(err)
	}
	j.st = nil
	j.clk.Advance(time.Second)
	if reboot {
		e := uuid.New()
		j.epoch.Store(&e)
	}
	j.open()
}

// The real harness over the journal, an Unkeyed tool and a downstream that
// counts its effects: however the wall clock jumps, and across restarts,
// a re-issue of the settled call is answered from the journal, and the
// downstream acts once.
func TestClockJumpNeverReruns(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before runs before the first call, between runs between it and
		// the re-issue (each may jump the clock and restart the journal).
		before, between func(j *jumpJournal)
	}{
		{"forward 8 days mid-run", nil, func(j *jumpJournal) { j.clk.Jump(eightDays) }},
		{"backward 8 days mid-run, then corrected", func(j *jumpJournal) { j.clk.Jump(-eightDays) },
			func(j *jumpJournal) { j.clk.Jump(eightDays) }},
		{"forward 8 days across a restart", nil, func(j *jumpJournal) {
			j.clk.Jump(eightDays)
			j.restart(false)
		}},
		{"backward 8 days across a restart, then corrected across another", func(j *jumpJournal) {
			j.clk.Jump(-eightDays)
			j.restart(false)
		}, func(j *jumpJournal) {
			j.clk.Jump(eightDays)
			j.restart(false)
		}},
		// After a reboot the monotonic clock starts again, and the wall
		// clock is all there is: never below the journal's high-water mark
		// (here a record written before the jump).
		{"backward 8 days across a reboot, then corrected across another", func(j *jumpJournal) {
			j.write()
			j.clk.Jump(-eightDays)
			j.restart(true)
		}, func(j *jumpJournal) {
			j.clk.Jump(eightDays)
			j.restart(true)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newJumpJournal(t)
			var effects atomic.Int64
			tool := harness.Tool{Name: "send_mail", Effect: journal.Unkeyed,
				Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
					effects.Add(1)
					return json.RawMessage(`{"sent":true}`), nil
				}}
			call := harness.ToolCall{Tenant: "acme", Session: "s", Turn: "1", Tool: "send_mail", Input: json.RawMessage(`{"to":"ann@example.com"}`)}
			run := func(what string) harness.Result {
				t.Helper()
				h := harness.New(j.st, nil) // default RecordTTL: 7 days
				defer h.Close()
				if err := h.Register(tool); err != nil {
					t.Fatal(err)
				}
				r := h.Call(context.Background(), call)
				if !r.OK() {
					t.Fatalf("%s: %v, %v", what, r.Status, r.Err)
				}
				return r
			}
			if tc.before != nil {
				tc.before(j)
			}
			if r := run("first call"); r.Source != harness.Executed {
				t.Fatalf("first call: source %v; want Executed", r.Source)
			}
			j.clk.Advance(time.Minute)
			tc.between(j)
			r := run("re-issue")
			if n := effects.Load(); n != 1 {
				t.Errorf("downstream effects = %d; want 1 (no real time passed: the record cannot have expired)", n)
			}
			if r.Source == harness.Executed {
				t.Errorf("re-issue: source %v; want the journal's answer", r.Source)
			}
		})
	}
}

// A live lease is not taken over when the wall clock jumps 8 days ahead
// of it: its owner is still running.
func TestClockJumpKeepsLiveLease(t *testing.T) {
	j := newJumpJournal(t)
	ctx := context.Background()
	req := journal.BeginRequest{
		Key:         uuid.New(),
		Intent:      keyderive.Intent{Tenant: "t", Session: "s", Turn: "1", Tool: "pay"},
		Fingerprint: keyderive.FingerprintOf([]byte(`{}`)),
		Owner:       "alive",
		AttemptID:   "a1",
		LeaseTTL:    time.Minute,
		Durable:     true,
	}
	if res, err := j.st.Begin(ctx, req); err != nil || res.Outcome != journal.Started {
		t.Fatalf("Begin = %v, %v; want Started", res.Outcome, err)
	}
	j.clk.Jump(eightDays)
	req.Owner, req.AttemptID = "other", "b1"
	if res, err := j.st.Begin(ctx, req); err != nil || res.Outcome != journal.Held {
		t.Fatalf("Begin by another owner after the wall clock jumped 8 days = %v, %v; want Held", res.Outcome, err)
	}
	// Real time passing does end it.
	j.clk.Advance(2 * time.Minute)
	if res, err := j.st.Begin(ctx, req); err != nil || res.Outcome != journal.TakenOver {
		t.Fatalf("Begin past the lease = %v, %v; want TakenOver", res.Outcome, err)
	}
}

// The store's time never goes backward across opens, and follows the
// monotonic clock, not the wall clock, within an epoch.
func TestClockNeverBackward(t *testing.T) {
	j := newJumpJournal(t)
	t0 := j.st.Now()
	if !t0.Equal(journaltest.Epoch) {
		t.Fatalf("store time at a new journal's open = %v; want the wall clock's %v", t0, journaltest.Epoch)
	}
	j.clk.Jump(-eightDays)
	if got := j.st.Now(); !got.Equal(t0) {
		t.Fatalf("store time after the wall clock went back 8 days = %v; want %v", got, t0)
	}
	j.clk.Advance(time.Second)
	if got, want := j.st.Now(), t0.Add(time.Second); !got.Equal(want) {
		t.Fatalf("store time a second later = %v; want %v", got, want)
	}
	j.write()        // the journal records its time line with its first write
	j.restart(false) // a second while down
	if got, want := j.st.Now(), t0.Add(2*time.Second); !got.Equal(want) {
		t.Fatalf("store time after a restart = %v; want %v (on the monotonic clock's line)", got, want)
	}
	// A write, so that Close records the high-water mark, then a reboot:
	// the time while down is lost, the time before kept.
	j.write()
	j.restart(true)
	if got := j.st.Now(); !got.After(t0.Add(2 * time.Second)) {
		t.Fatalf("store time after a reboot with the wall clock 8 days back = %v; want after %v", got, t0.Add(2*time.Second))
	}
}

// write records a settled record of its own.
func (j *jumpJournal) write() {
	j.t.Helper()
	ctx := context.Background()
	res, err := j.st.Begin(ctx, journal.BeginRequest{Key: uuid.New(), Intent: keyderive.Intent{Tool: "x"}, Owner: "o", AttemptID: "a", Durable: true})
	if err == nil {
		_, err = j.st.Complete(ctx, journal.Completion{Key: res.Record.Key, Token: res.Token, State: journal.StateSucceeded})
	}
	if err != nil {
		j.t.Fatal(err)
	}
}
