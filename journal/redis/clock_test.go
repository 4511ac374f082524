package redis_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	redisjournal "github.com/agentonce/agentonce/journal/redis"
)

// serverTime reads the server's clock.
func serverTime(t *testing.T, s *redisjournal.Store) time.Time {
	t.Helper()
	return s.Now()
}

// TestServerClockJudges: a store whose estimate of the server's clock is
// an hour off, ahead or behind, still writes the server's time: the script
// refuses the estimate and the transition is decided again on the server's
// clock.
func TestServerClockJudges(t *testing.T) {
	c := client(t)
	p := prefix(t, c)
	ctx := context.Background()
	s := openStore(t, c, p, nil)
	for _, off := range []time.Duration{time.Hour, -time.Hour} {
		before := serverTime(t, s)
		redisjournal.SetClockReading(s, before.Add(off))
		key := uuid.New()
		res, err := s.Begin(ctx, journal.BeginRequest{Key: key, Owner: "o", AttemptID: "a1", Durable: true})
		if err != nil {
			t.Fatal(err)
		}
		after := serverTime(t, s)
		if got := res.Record.Created; got.Before(before.Add(-time.Second)) || got.After(after.Add(time.Second)) {
			t.Errorf("estimate off by %v: Begin's Created = %v; want the server's time, between %v and %v", off, got, before, after)
		}
		redisjournal.SetClockReading(s, after.Add(off))
		r, err := s.Complete(ctx, journal.Completion{Key: key, Token: res.Token, State: journal.StateSucceeded, Output: []byte(`1`)})
		if err != nil {
			t.Fatal(err)
		}
		end := serverTime(t, s)
		if r.Updated.Before(after.Add(-time.Second)) || r.Updated.After(end.Add(time.Second)) {
			t.Errorf("estimate off by %v: Complete's Updated = %v; want the server's time, between %v and %v", off, r.Updated, after, end)
		}
	}
}

// TestRememberedRecordIsCompared: the owner's Complete after its own Begin
// is decided on the record it remembers writing, and the script compares
// it with the server's: when an operator resolved the key meanwhile, from
// another process, the Complete is fenced, not written over the verdict.
func TestRememberedRecordIsCompared(t *testing.T) {
	c := client(t)
	p := prefix(t, c)
	ctx := context.Background()
	owner, operator := openStore(t, c, p, nil), openStore(t, c, p, nil)
	key := uuid.New()
	res, err := owner.Begin(ctx, journal.BeginRequest{Key: key, Owner: "o", AttemptID: "a1", Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := operator.Resolve(ctx, key, journal.Resolution{State: journal.StateFailed, Reason: "checked: not charged", By: "ops"}); err != nil {
		t.Fatal(err)
	}
	_, err = owner.Complete(ctx, journal.Completion{Key: key, Token: res.Token, State: journal.StateSucceeded, Output: []byte(`{"charged":true}`)})
	if !errors.Is(err, journal.ErrFenced) {
		t.Errorf("Complete after another process resolved the key: %v; want ErrFenced", err)
	}
	if r, err := owner.Get(ctx, key); err != nil || r.State != journal.StateFailed || r.Resolution == nil {
		t.Errorf("record after the fenced Complete = %v %v, %v; want the operator's verdict (failed)", r.State, r.Resolution, err)
	}
}

// TestServerClockHammer: stores in one process and on one prefix, on the
// server's clock, race Begin and Complete on shared keys. Each key runs
// once, every record ends succeeded with its one owner's output, and its
// times run forward.
func TestServerClockHammer(t *testing.T) {
	c := client(t)
	p := prefix(t, c)
	ctx := context.Background()
	stores := []*redisjournal.Store{openStore(t, c, p, nil), openStore(t, c, p, nil), openStore(t, c, p, nil)}
	keys := make([]uuid.UUID, 40)
	for i := range keys {
		keys[i] = uuid.New()
	}
	var mu sync.Mutex
	started := map[uuid.UUID][]string{}
	var wg sync.WaitGroup
	for w := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[w%len(stores)]
			owner := fmt.Sprintf("w%d", w)
			for _, k := range keys {
				res, err := s.Begin(ctx, journal.BeginRequest{Key: k, Owner: owner, AttemptID: owner, Durable: true, Guard: journal.GuardTurn})
				if err != nil {
					t.Error(err)
					return
				}
				if res.Outcome != journal.Started {
					continue
				}
				mu.Lock()
				started[k] = append(started[k], owner)
				mu.Unlock()
				if _, err := s.Complete(ctx, journal.Completion{Key: k, Token: res.Token, State: journal.StateSucceeded, Output: []byte(owner)}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for _, k := range keys {
		if len(started[k]) != 1 {
			t.Errorf("key %s started by %v; want exactly one owner", k, started[k])
			continue
		}
		r, err := stores[0].Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != journal.StateSucceeded || string(r.Output) != started[k][0] {
			t.Errorf("key %s = %v %q; want succeeded with %q", k, r.State, r.Output, started[k][0])
		}
		if r.Updated.Before(r.Created) || len(r.Attempts) != 1 || r.Attempts[0].End.Before(r.Attempts[0].Start) {
			t.Errorf("key %s: times run backwards: created %v, updated %v, attempts %+v", k, r.Created, r.Updated, r.Attempts)
		}
	}
}

// TestScriptFlushed: a server that lost the script (restarted, SCRIPT
// FLUSH) is sent it again.
func TestScriptFlushed(t *testing.T) {
	srv := startServer(t, "--appendonly", "yes", "--appendfsync", "always")
	c := srv.client()
	defer c.Close()
	ctx := context.Background()
	s, err := redisjournal.New(ctx, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		res, err := s.Begin(ctx, journal.BeginRequest{Key: uuid.New(), Owner: "o", AttemptID: fmt.Sprint(i), Durable: true})
		if err != nil || res.Outcome != journal.Started {
			t.Errorf("Begin after SCRIPT FLUSH = %v, %v; want Started", res.Outcome, err)
		}
	}
}
