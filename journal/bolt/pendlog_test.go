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

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

const pendingEnv = "AGENTONCE_JOURNAL_PENDING_CHILD"

// TestPendingChild is the process TestNonDurableOutlivesKill kills: it
// begins intents without Durable (a Keyed call's write-ahead), starts a
// second attempt of one of them, completes one, says so, and waits.
func TestPendingChild(t *testing.T) {
	path := os.Getenv(pendingEnv)
	if path == "" {
		t.Skip("helper process for TestNonDurableOutlivesKill")
	}
	s, err := bolt.Open(path, nil)
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(3)
	}
	ctx := context.Background()
	fail := func(what string, err error) {
		fmt.Println(what, "error:", err)
		os.Exit(3)
	}
	var keys [3]uuid.UUID
	for i := range keys {
		keys[i] = uuid.New()
		req := benchRequest(keys[i], false)
		req.Effect = journal.Keyed
		res, err := s.Begin(ctx, req)
		if err != nil {
			fail("begin", err)
		}
		switch i {
		case 1:
			if err := s.StartAttempt(ctx, journal.AttemptRequest{Key: keys[i], Token: res.Token, ID: "att-0002", PrevClass: "maybe-executed"}); err != nil {
				fail("attempt", err)
			}
		case 2:
			if _, err := s.Complete(ctx, journal.Completion{Key: keys[i], Token: res.Token, State: journal.StateSucceeded, Output: []byte(`"done"`)}); err != nil {
				fail("complete", err)
			}
		}
	}
	fmt.Println("ready", keys[0], keys[1], keys[2])
	select {}
}

// TestNonDurableOutlivesKill: a record written without Durable is in the
// overlay only, and a SIGKILL of its process used to take it along, so the
// successor found no record and began the intent afresh, as if no attempt
// had ever run. It must find it pending, under a lease that ended with the
// process, with every attempt the killed process had recorded.
func TestNonDurableOutlivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	path := filepath.Join(t.TempDir(), "j.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestPendingChild$")
	cmd.Env = append(os.Environ(), pendingEnv+"="+path)
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
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "ready" {
		t.Fatalf("child said %q; want ready and three keys", line)
	}
	var keys [3]uuid.UUID
	for i := range keys {
		keys[i] = uuid.MustParse(f[i+1])
	}

	// A reader shows what the killed writer left, without writing it.
	ro := mustOpen(t, path, &bolt.Options{Journal: journal.Options{ReadOnly: true}})
	if r, err := ro.Get(context.Background(), keys[1]); err != nil || r.State != journal.StatePending || len(r.Attempts) != 2 {
		t.Errorf("read-only Get of the killed process's record: %+v, %v; want pending with 2 attempts", r, err)
	}
	if err := bolt.Compact(context.Background(), path, path+".compact", nil); err == nil || !strings.Contains(err.Error(), "-pending") {
		t.Errorf("Compact with a pending log: %v; want an error naming the log", err)
	}
	ro.Close()

	s := mustOpen(t, path, nil)
	ctx := context.Background()
	// Folded into the file at the open: the log is gone.
	if _, err := os.Stat(path + "-pending"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pending log after a writer's open: %v; want it removed", err)
	}
	var tokens [2]uint64
	for i, want := range []int{1, 2} {
		r, err := s.Get(ctx, keys[i])
		if err != nil {
			t.Fatalf("key %d: Get after the kill: %v; want the pending record", i, err)
		}
		if r.State != journal.StatePending || len(r.Attempts) != want {
			t.Errorf("key %d: %s with %d attempts; want pending with %d", i, r.State, len(r.Attempts), want)
		}
		if r.Lease.Expires.After(s.Now()) {
			t.Errorf("key %d: lease until %v, after the open (%v): its owner is dead", i, r.Lease.Expires, s.Now())
		}
		// The next Begin takes the intent over as one that may have run.
		req := benchRequest(keys[i], false)
		req.Effect = journal.Keyed
		req.AttemptID = "att-next"
		res, err := s.Begin(ctx, req)
		if err != nil {
			t.Fatalf("key %d: Begin after the kill: %v", i, err)
		}
		tokens[i] = res.Token
		if res.Outcome != journal.TakenOver {
			t.Errorf("key %d: Begin after the kill: outcome %v; want %v", i, res.Outcome, journal.TakenOver)
		}
	}
	if r, err := s.Get(ctx, keys[2]); err != nil || r.State != journal.StateSucceeded {
		t.Errorf("completed key: %+v, %v; want succeeded", r, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, path, nil)
	defer s.Close()
	for i := range tokens {
		if r, err := s.Get(ctx, keys[i]); err != nil || r.State != journal.StatePending || r.Lease.Token != tokens[i] {
			t.Errorf("key %d after a clean reopen: %+v, %v; want the taken-over record (token %d)", i, r, err, tokens[i])
		}
	}
}

// TestPendingLogLifecycle: the log exists while the overlay holds a record,
// is emptied once a durable write supersedes the last, and is removed at
// Close; a damaged log fails the open naming the file, and a frame cut
// short (a write a system crash interrupted) ends it.
func TestPendingLogLifecycle(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j.db")
	logPath := path + "-pending"
	ctx := context.Background()
	s := mustOpen(t, path, nil)
	key := uuid.New()
	res, err := s.Begin(ctx, benchRequest(key, false))
	if err != nil {
		t.Fatal(err)
	}
	full := fileSize(t, logPath)
	if full <= 8 {
		t.Fatalf("pending log holds %d bytes after a non-durable Begin; want a frame", full)
	}
	if _, err := s.Complete(ctx, journal.Completion{Key: key, Token: res.Token, State: journal.StateSucceeded, Output: []byte(`1`)}); err != nil {
		t.Fatal(err)
	}
	if n := fileSize(t, logPath); n != 8 {
		t.Errorf("pending log holds %d bytes once its only record is durable; want the 8-byte header", n)
	}
	key2 := uuid.New()
	if _, err := s.Begin(ctx, benchRequest(key2, false)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(logPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pending log after Close: %v; want it removed", err)
	}

	// A log left by a killed writer, cut in its last frame: that frame is
	// a write the system did not finish, and the open ignores it.
	if err := os.WriteFile(logPath, b[:len(b)-3], 0o600); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, path, nil)
	s.Close()

	// Damage inside a frame whose CRC was fixed up is not a torn write.
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"bad header", []byte("not a log at all")},
		{"bad record", func() []byte {
			c := append([]byte(nil), b...)
			c[len(c)-1] ^= 0xff
			bolt.FixPendingCRC(c)
			return c
		}()},
	} {
		if err := os.WriteFile(logPath, tc.data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := bolt.Open(path, nil)
		if !errors.Is(err, journal.ErrCorrupt) || !strings.Contains(err.Error(), logPath) {
			t.Errorf("%s: Open = %v; want ErrCorrupt naming %s", tc.name, err, logPath)
		}
	}
}

// The log recycles a frame once a newer one of its key is written or its
// key is made durable; a rewrite of the log copies the live frames. A
// frame recycled while still live would be overwritten by a later put,
// and the rewrite would carry another record in its place. Three pending
// keys are renewed until the log is rewritten (it shrinks), a fourth key
// made durable on the way; the rewritten log must hold each pending key's
// newest record and nothing else.
func TestPendingLogRewriteKeepsLiveFrames(t *testing.T) {
	now := time.Date(2031, 3, 1, 0, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "j.db")
	s := mustOpen(t, path, &bolt.Options{Journal: journal.Options{Now: func() time.Time { return now }}})
	defer s.Close()
	ctx := context.Background()
	var keys []uuid.UUID
	tokens := map[uuid.UUID]uint64{}
	for range 4 {
		key := uuid.New()
		res, err := s.Begin(ctx, benchRequest(key, false))
		if err != nil {
			t.Fatal(err)
		}
		keys, tokens[key] = append(keys, key), res.Token
	}
	done, pending := keys[0], keys[1:]
	last := fileSize(t, path+"-pending")
	for i := 0; ; i++ {
		if i == 100 {
			if _, err := s.Complete(ctx, journal.Completion{Key: done, Token: tokens[done], State: journal.StateSucceeded}); err != nil {
				t.Fatal(err)
			}
		}
		if i > 100_000 {
			t.Fatal("the pending log was never rewritten")
		}
		key := pending[i%len(pending)]
		now = now.Add(time.Millisecond)
		if _, err := s.Renew(ctx, journal.RenewRequest{Key: key, Token: tokens[key], LeaseTTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		n := fileSize(t, path+"-pending")
		if n < last && i > 100 {
			break // rewritten by this renewal
		}
		last = n
	}
	recs, err := bolt.PendingLogRecords(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(pending) {
		t.Fatalf("rewritten pending log holds %d keys; want the %d still pending", len(recs), len(pending))
	}
	for _, r := range recs {
		want, err := s.Get(ctx, r.Key)
		if err != nil {
			t.Fatal(err)
		}
		if r.Key == done || !r.Lease.Expires.Equal(want.Lease.Expires) {
			t.Errorf("rewritten pending log's record of %s: lease until %v; want the overlay's, until %v", r.Key, r.Lease.Expires, want.Lease.Expires)
		}
	}
}
