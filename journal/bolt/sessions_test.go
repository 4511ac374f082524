package bolt_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/keyderive"
)

// listKeys returns the keys List yields for f, in order.
func listKeys(t *testing.T, s journal.Store, f journal.Filter) []uuid.UUID {
	t.Helper()
	var out []uuid.UUID
	for r, err := range s.List(context.Background(), f) {
		if err != nil {
			t.Fatalf("List(%+v): %v", f, err)
		}
		out = append(out, r.Key)
	}
	return out
}

// writeSessions records n intents spread over sessions and tenants, some
// settled, some pending (durable and not), and returns the store open.
func writeSessions(t *testing.T, path string, n int, clock func() time.Time) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{Now: clock}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range n {
		req := journal.BeginRequest{
			Key: uuid.New(),
			Intent: keyderive.Intent{Tenant: fmt.Sprintf("tenant-%d", i%2), Session: fmt.Sprintf("s%d", i%5),
				Turn: fmt.Sprint(i % 3), Tool: "pay"},
			Fingerprint: keyderive.FingerprintOf([]byte(fmt.Sprint(i))),
			Owner:       "o", AttemptID: "a", LeaseTTL: time.Minute, Durable: i%2 == 0,
		}
		res, err := s.Begin(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if i%7 != 0 {
			if _, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token,
				State: journal.StateSucceeded, Output: []byte(`1`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s
}

// A read-only open lists a session from the session index in the file,
// and agrees with the writer that wrote it, across GC and reopening.
func TestPersistedSessionIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tick := func() time.Time { now = now.Add(time.Millisecond); return now }
	w := writeSessions(t, path, 140, tick)

	filters := []journal.Filter{
		{Session: "s1"},
		{Session: "s2", Tenant: "tenant-1"},
		{Session: "s3", Turn: "2"},
		{Session: "s4", State: journal.StatePending},
		{Session: "s0", Limit: 3},
		{Session: "nope"},
	}
	want := map[int][]uuid.UUID{}
	for i, f := range filters {
		want[i] = listKeys(t, w, f)
	}
	if len(want[0]) != 28 || len(want[4]) != 3 || len(want[5]) != 0 {
		t.Fatalf("writer listed %d, %d, %d records; want 28, 3, 0", len(want[0]), len(want[4]), len(want[5]))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	check := func(stage string) {
		t.Helper()
		ro, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{ReadOnly: true, Now: tick}})
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		if bolt.Legacy(ro) {
			t.Fatalf("%s: a read-only open of a layout-2 journal reads every record", stage)
		}
		for i, f := range filters {
			if got := listKeys(t, ro, f); !slices.Equal(got, want[i]) {
				t.Errorf("%s: List(%+v) = %v; want %v", stage, f, got, want[i])
			}
		}
	}
	check("after close")

	// GC past the TTL of the settled records, then more writes: the index
	// follows removals and additions.
	now = now.Add(journal.DefaultTTL + time.Hour)
	w, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{Now: tick}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := w.GC(context.Background(), journal.GCOptions{}); err != nil || res.Removed == 0 {
		t.Fatalf("GC = %+v, %v; want some removed", res, err)
	}
	ctx := context.Background()
	extra := journal.BeginRequest{Key: uuid.New(), Intent: keyderive.Intent{Tenant: "tenant-1", Session: "s1", Tool: "pay"},
		Owner: "o", AttemptID: "a", LeaseTTL: time.Minute}
	if _, err := w.Begin(ctx, extra); err != nil { // non-durable: written at Close
		t.Fatal(err)
	}
	for i, f := range filters {
		want[i] = listKeys(t, w, f)
	}
	if !slices.Contains(want[0], extra.Key) {
		t.Fatalf("writer does not list the new pending record")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	check("after gc and a new record")
}

// A writer that dies leaves its indexes as its last commit left them: they
// are written with the records, so a reader's session listing agrees with
// a pass over every record, and so does the next writer's.
func TestSessionIndexAfterUncleanClose(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	path := filepath.Join(t.TempDir(), "j")
	keys := crashWriter(t, path, 30) // writes 30 records, then SIGKILLed
	ro, err := bolt.Open(path, &bolt.Options{Journal: journal.Options{ReadOnly: true}})
	if err != nil {
		t.Fatal(err)
	}
	f := journal.Filter{Session: "sess-7f3a9c"}
	got := listKeys(t, ro, f)
	var want []uuid.UUID
	for r, err := range ro.List(context.Background(), journal.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Intent.Session == f.Session {
			want = append(want, r.Key)
		}
	}
	ro.Close()
	if len(want) < len(keys) || !slices.Equal(got, want) {
		t.Fatalf("after the crash: List(%+v) = %d keys, every record of the session = %d, committed %d; want all equal", f, len(got), len(want), len(keys))
	}
	w, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got := listKeys(t, w, f); !slices.Equal(got, want) {
		t.Fatalf("writer's List after the crash = %v; want %v", got, want)
	}
}

// crashWriter runs TestBoltCrashChild on path, kills it with SIGKILL once
// it reported n committed records, and returns every key it reported (a
// few more than n may arrive before the signal lands).
func crashWriter(t *testing.T, path string, n int) []uuid.UUID {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBoltCrashChild$")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var keys []uuid.UUID
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		key, ok := strings.CutPrefix(sc.Text(), "committed ")
		if !ok {
			t.Fatalf("child said %q", sc.Text())
		}
		keys = append(keys, uuid.MustParse(key))
		if len(keys) == n {
			cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v after %d records; want killed by SIGKILL", err, len(keys))
	}
	return keys
}
