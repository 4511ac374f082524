package bolt_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

// charges is the bucket the tests' effects write to: one of their own in
// the journal's file.
var charges = []byte("charges")

// charge is an effect that writes n rows for key into charges and answers
// with its output.
func charge(key uuid.UUID, n int) func(ctx context.Context) ([]byte, error) {
	return func(ctx context.Context) ([]byte, error) {
		tx, ok := bolt.TxFrom(ctx)
		if !ok {
			return nil, errors.New("no transaction in the effect's context")
		}
		b, err := tx.CreateBucketIfNotExists(charges)
		if err != nil {
			return nil, err
		}
		for i := range n {
			if err := b.Put(fmt.Appendf(nil, "%s/%d", key, i), []byte("4900")); err != nil {
				return nil, err
			}
		}
		return []byte(`{"charged":true}`), nil
	}
}

// countCharges counts key's rows in the charges bucket.
func countCharges(t testing.TB, s *bolt.Store, key uuid.UUID) int {
	t.Helper()
	n := 0
	err := s.View(context.Background(), func(tx *bbolt.Tx) error {
		b := tx.Bucket(charges)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			if strings.HasPrefix(string(k), key.String()+"/") {
				n++
			}
			return nil
		})
	})
	if err != nil {
		t.Fatalf("reading the charges: %v", err)
	}
	return n
}

// effectRequest is the write-ahead of a Keyed intent, which a Begin may
// take over once its lease has run out.
func effectRequest(key uuid.UUID, durable bool) journal.BeginRequest {
	r := benchRequest(key, durable)
	r.Effect, r.Guard = journal.Keyed, journal.GuardOff
	return r
}

// begin starts the intent of key and returns its token.
func begin(t testing.TB, s *bolt.Store, key uuid.UUID, durable bool) uint64 {
	t.Helper()
	res, err := s.Begin(context.Background(), effectRequest(key, durable))
	if err != nil || (res.Outcome != journal.Started && res.Outcome != journal.TakenOver) {
		t.Fatalf("Begin(%s) = %v, %v; want Started or TakenOver", key, res.Outcome, err)
	}
	return res.Token
}

func mustState(t testing.TB, s *bolt.Store, key uuid.UUID, want journal.State) journal.Record {
	t.Helper()
	r, err := s.Get(context.Background(), key)
	if err != nil || r.State != want {
		t.Fatalf("Get(%s) = %s, %v; want %s", key, r.State, err, want)
	}
	return r
}

// The effect's rows and the outcome commit together, durably, with either
// kind of write-ahead: the durable one in the file, the other in the
// overlay and the pending log.
func TestCompleteWith(t *testing.T) {
	for _, durable := range []bool{true, false} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "j.db")
			s := mustOpen(t, path, nil)
			key := uuid.New()
			token := begin(t, s, key, durable)

			rec, err := s.CompleteWith(ctx, key, token, charge(key, 3))
			if err != nil {
				t.Fatalf("CompleteWith = %v", err)
			}
			if rec.State != journal.StateSucceeded || string(rec.Output) != `{"charged":true}` || rec.Attempts[len(rec.Attempts)-1].End.IsZero() {
				t.Fatalf("CompleteWith = %s %s; want succeeded with the effect's output, attempt closed", rec.State, rec.Output)
			}
			if n := countCharges(t, s, key); n != 3 {
				t.Fatalf("charges = %d; want 3", n)
			}
			// Done: a second completion is fenced and runs nothing.
			ran := false
			_, err = s.CompleteWith(ctx, key, token, func(context.Context) ([]byte, error) { ran = true; return nil, nil })
			if !errors.Is(err, journal.ErrFenced) || ran {
				t.Fatalf("second CompleteWith = %v, effect ran %v; want ErrFenced, not run", err, ran)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path + "-pending"); err == nil {
				t.Errorf("pending log left after the record was completed")
			}

			s = mustOpen(t, path, nil)
			defer s.Close()
			if r := mustState(t, s, key, journal.StateSucceeded); string(r.Output) != `{"charged":true}` {
				t.Errorf("reopened: output %s", r.Output)
			}
			if n := countCharges(t, s, key); n != 3 {
				t.Errorf("reopened: charges = %d; want 3", n)
			}
		})
	}
}

// An effect that fails, or panics, after its writes leaves neither its
// writes nor an outcome: the record stays pending under its owner, who can
// complete it afterwards.
func TestCompleteWithRollsBack(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, filepath.Join(t.TempDir(), "j.db"), nil)
	defer s.Close()

	key := uuid.New()
	token := begin(t, s, key, true)
	boom := errors.New("card declined")
	_, err := s.CompleteWith(ctx, key, token, func(ctx context.Context) ([]byte, error) {
		if _, err := charge(key, 2)(ctx); err != nil {
			return nil, err
		}
		return nil, boom
	})
	if err != boom {
		t.Fatalf("CompleteWith(failing effect) = %v; want the effect's error as is", err)
	}
	if n := countCharges(t, s, key); n != 0 {
		t.Fatalf("charges after a failed effect = %d; want 0 (rolled back)", n)
	}
	mustState(t, s, key, journal.StatePending)

	got := func() (v any) {
		defer func() { v = recover() }()
		s.CompleteWith(ctx, key, token, func(ctx context.Context) ([]byte, error) {
			if _, err := charge(key, 2)(ctx); err != nil {
				return nil, err
			}
			panic("out of cheese")
		})
		return nil
	}()
	if got != "out of cheese" {
		t.Fatalf("CompleteWith(panicking effect) raised %v; want the effect's panic", got)
	}
	if n := countCharges(t, s, key); n != 0 {
		t.Fatalf("charges after a panicked effect = %d; want 0 (rolled back)", n)
	}
	mustState(t, s, key, journal.StatePending)

	// The key's lock and the writer lock were let go: the owner still
	// completes it, once.
	if _, err := s.CompleteWith(ctx, key, token, charge(key, 1)); err != nil {
		t.Fatalf("CompleteWith after the rollbacks = %v", err)
	}
	if n := countCharges(t, s, key); n != 1 {
		t.Fatalf("charges = %d; want 1", n)
	}
}

// A stale token, an unknown key, a settled record, a closed or read-only
// store: the effect never runs and nothing is written.
func TestCompleteWithRefusesWithoutRunning(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "j.db")
	s := mustOpen(t, path, nil)
	key := uuid.New()
	token := begin(t, s, key, true)
	ran := 0
	effect := func(ctx context.Context) ([]byte, error) { ran++; return charge(key, 1)(ctx) }

	// Another caller took the intent over: the first owner is fenced.
	if _, err := s.Renew(ctx, journal.RenewRequest{Key: key, Token: token, LeaseTTL: 1}); err != nil {
		t.Fatal(err)
	}
	took := begin(t, s, key, true)
	if took == token {
		t.Fatalf("takeover kept token %d", token)
	}
	cases := []struct {
		name  string
		key   uuid.UUID
		token uint64
		want  error
	}{
		{"stale token", key, token, journal.ErrFenced},
		{"unknown key", uuid.New(), 1, journal.ErrNotFound},
		{"zero key", uuid.Nil, 1, journal.ErrInvalid},
	}
	for _, c := range cases {
		if _, err := s.CompleteWith(ctx, c.key, c.token, effect); !errors.Is(err, c.want) {
			t.Errorf("CompleteWith(%s) = %v; want %v", c.name, err, c.want)
		}
	}
	if _, err := s.Complete(ctx, journal.Completion{Key: key, Token: took, State: journal.StateFailed}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CompleteWith(ctx, key, took, effect); !errors.Is(err, journal.ErrFenced) {
		t.Errorf("CompleteWith(settled record) = %v; want ErrFenced", err)
	}
	if ran != 0 || countCharges(t, s, key) != 0 {
		t.Fatalf("effect ran %d times, %d charges; want none", ran, countCharges(t, s, key))
	}
	mustState(t, s, key, journal.StateFailed)

	s.Close()
	if _, err := s.CompleteWith(ctx, key, took, effect); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("CompleteWith(closed store) = %v; want ErrClosed", err)
	}
	ro := mustOpen(t, path, &bolt.Options{Journal: journal.Options{ReadOnly: true}})
	defer ro.Close()
	if _, err := ro.CompleteWith(ctx, key, took, effect); !errors.Is(err, journal.ErrReadOnly) {
		t.Errorf("CompleteWith(read-only store) = %v; want ErrReadOnly", err)
	}
	if ran != 0 {
		t.Fatalf("effect ran %d times; want 0", ran)
	}
}

// An effect that removes, replaces or rewrites the journal's own buckets is
// refused, and rolled back with everything it did.
func TestCompleteWithGuardsJournalBuckets(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, filepath.Join(t.TempDir(), "j.db"), nil)
	defer s.Close()
	cases := map[string]func(tx *bbolt.Tx) error{
		"delete fresh": func(tx *bbolt.Tx) error { return tx.DeleteBucket([]byte("fresh")) },
		"replace index": func(tx *bbolt.Tx) error {
			if err := tx.DeleteBucket([]byte("index")); err != nil {
				return err
			}
			_, err := tx.CreateBucket([]byte("index"))
			return err
		},
		"meta version": func(tx *bbolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("version"), []byte{1}) },
		"meta namespace": func(tx *bbolt.Tx) error {
			return tx.Bucket([]byte("meta")).Put([]byte("namespace"), make([]byte, 16))
		},
	}
	for name, touch := range cases {
		key := uuid.New()
		token := begin(t, s, key, true)
		_, err := s.CompleteWith(ctx, key, token, func(ctx context.Context) ([]byte, error) {
			tx, _ := bolt.TxFrom(ctx)
			if _, err := charge(key, 1)(ctx); err != nil {
				return nil, err
			}
			return nil, touch(tx)
		})
		if !errors.Is(err, journal.ErrInvalid) || !strings.Contains(err.Error(), "buckets of its own") {
			t.Errorf("%s: CompleteWith = %v; want ErrInvalid saying the effect writes to buckets of its own", name, err)
		}
		mustState(t, s, key, journal.StatePending)
		if n := countCharges(t, s, key); n != 0 {
			t.Errorf("%s: charges = %d; want 0 (rolled back)", name, n)
		}
	}
	// The rollbacks left the counters as they were.
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	scan, err := s.ScanStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != len(cases) || scan.Records != st.Records || st.ByState[journal.StatePending] != len(cases) {
		t.Errorf("Stats = %d records (%v), ScanStats %d; want %d pending", st.Records, st.ByState, scan.Records, len(cases))
	}
}

// A renewal of the key while its effect runs waits for the effect, and is
// then fenced by the recorded outcome; Close waits for the effect too. No
// deadlock, and the outcome is on file.
func TestCompleteWithRenewAndClose(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "j.db")
	s := mustOpen(t, path, nil)
	key := uuid.New()
	token := begin(t, s, key, false)

	renewed := make(chan error, 1)
	closed := make(chan error, 1)
	_, err := s.CompleteWith(ctx, key, token, func(ctx context.Context) ([]byte, error) {
		renewing, closing := make(chan struct{}), make(chan struct{})
		go func() {
			close(renewing)
			_, err := s.Renew(context.Background(), journal.RenewRequest{Key: key, Token: token})
			renewed <- err
		}()
		<-renewing
		go func() {
			close(closing)
			closed <- s.Close()
		}()
		<-closing
		return charge(key, 1)(ctx)
	})
	if err != nil {
		t.Fatalf("CompleteWith = %v", err)
	}
	if err := <-renewed; !errors.Is(err, journal.ErrFenced) && !errors.Is(err, journal.ErrClosed) {
		t.Errorf("Renew during the effect = %v; want ErrFenced (the outcome recorded first) or ErrClosed", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close during the effect = %v", err)
	}
	s = mustOpen(t, path, nil)
	defer s.Close()
	mustState(t, s, key, journal.StateSucceeded)
	if n := countCharges(t, s, key); n != 1 {
		t.Errorf("charges = %d; want 1", n)
	}
}

// No Begin can take the intent over while its effect runs, even once the
// lease has run out: the fence holds until the outcome commits, and the
// Begin, which waits for it, is answered the succeeded record.
//
// The effect gives the Begin a while to get through before it returns; on
// a store that lets it, it then takes the intent over and the test fails.
// It never fails a store that holds the key, however slow the machine.
func TestCompleteWithHoldsTheKey(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, filepath.Join(t.TempDir(), "j.db"), nil)
	defer s.Close()
	key := uuid.New()
	token := begin(t, s, key, false)
	if _, err := s.Renew(ctx, journal.RenewRequest{Key: key, Token: token, LeaseTTL: 1}); err != nil {
		t.Fatal(err)
	}
	type beginResult struct {
		res journal.BeginResult
		err error
	}
	begun := make(chan beginResult, 1)
	_, err := s.CompleteWith(ctx, key, token, func(ctx context.Context) ([]byte, error) {
		go func() {
			res, err := s.Begin(context.Background(), effectRequest(key, false))
			begun <- beginResult{res, err}
		}()
		select {
		case b := <-begun:
			begun <- b
		case <-time.After(200 * time.Millisecond):
		}
		return charge(key, 1)(ctx)
	})
	if err != nil {
		t.Fatalf("CompleteWith = %v", err)
	}
	b := <-begun
	if b.err != nil || b.res.Outcome != journal.Answered || b.res.Record.State != journal.StateSucceeded {
		t.Fatalf("Begin during the effect = %v %s, %v; want Answered with the succeeded record", b.res.Outcome, b.res.Record.State, b.err)
	}
	mustState(t, s, key, journal.StateSucceeded)
}

const effectKillEnv = "AGENTONCE_EFFECT_KILL_CHILD"

// TestCompleteWithKillChild begins an intent and dies, by its parent's
// SIGKILL, in the middle of the effect that completes it.
func TestCompleteWithKillChild(t *testing.T) {
	env := os.Getenv(effectKillEnv)
	if env == "" {
		t.Skip("helper process for TestCompleteWithKilled")
	}
	path, durable, _ := strings.Cut(env, ",")
	s := mustOpen(t, path, nil)
	key := uuid.New()
	token := begin(t, s, key, durable == "durable")
	s.CompleteWith(context.Background(), key, token, func(ctx context.Context) ([]byte, error) {
		if _, err := charge(key, 2)(ctx); err != nil {
			return nil, err
		}
		fmt.Println("in effect", key)
		select {}
	})
}

// A process killed in the middle of an effect leaves none of its writes,
// and its record pending: the next open retakes it, and the retry's effect
// runs once.
func TestCompleteWithKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, durable := range []string{"durable", "non-durable"} {
		t.Run(durable, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j.db")
			cmd := exec.Command(os.Args[0], "-test.run=^TestCompleteWithKillChild$")
			cmd.Env = append(os.Environ(), effectKillEnv+"="+path+","+durable)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(out).ReadString('\n')
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			k, ok := strings.CutPrefix(strings.TrimSpace(line), "in effect ")
			key, err := uuid.Parse(k)
			if !ok || err != nil {
				t.Fatalf("child said %q; want in effect <key>", line)
			}

			s := mustOpen(t, path, nil)
			defer s.Close()
			if n := countCharges(t, s, key); n != 0 {
				t.Fatalf("charges after the kill = %d; want 0", n)
			}
			mustState(t, s, key, journal.StatePending)
			res, err := s.Begin(context.Background(), effectRequest(key, true))
			if err != nil || res.Outcome != journal.TakenOver {
				t.Fatalf("Begin after the kill = %v, %v; want TakenOver", res.Outcome, err)
			}
			if _, err := s.CompleteWith(context.Background(), key, res.Token, charge(key, 2)); err != nil {
				t.Fatalf("CompleteWith of the retry = %v", err)
			}
			if n := countCharges(t, s, key); n != 2 {
				t.Fatalf("charges = %d; want 2 (the retry's, once)", n)
			}
		})
	}
}
