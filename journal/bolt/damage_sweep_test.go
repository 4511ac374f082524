package bolt_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/keyderive"
	"github.com/agentonce/agentonce/retryclass"
)

// sweepTools are the Unkeyed tools of the corruption sweep, counting their
// runs: send succeeds, flaky's answer is lost (its outcome unknown).
type sweepTools struct{ runs atomic.Int64 }

func (st *sweepTools) register(t *testing.T, h *harness.Harness) {
	t.Helper()
	send := func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
		st.runs.Add(1)
		return append(json.RawMessage(`{"sent":`), append(in, '}')...), nil
	}
	flaky := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		st.runs.Add(1)
		return nil, errors.New("read tcp 127.0.0.1:443: connection reset by peer")
	}
	if err := h.Register(harness.Tool{Name: "send", Effect: journal.Unkeyed, Func: send},
		harness.Tool{Name: "flaky", Effect: journal.Unkeyed, Func: flaky}); err != nil {
		t.Fatal(err)
	}
}

var quiet = slog.New(slog.DiscardHandler)

var sweepRetry = &retryclass.Policy{MaxAttempts: 2, InitialInterval: time.Millisecond,
	MaxInterval: 2 * time.Millisecond, MaxElapsed: time.Second, InFlightBudget: 5 * time.Millisecond}

// sweepLayout is a small journal: sent settled calls spread over sessions
// sessions (with outputs of pad bytes more), unknown calls whose answer
// was lost, pending ones whose process stopped before the tool ran, and
// suppressed ones (a step key reused with another input).
type sweepLayout struct {
	name                         string
	sent, sessions, pad          int
	unknown, pending, suppressed int
}

var sweepLayouts = []sweepLayout{
	{name: "settled20", sent: 20, sessions: 1},
	{name: "mixed", sent: 20, sessions: 4, unknown: 3, pending: 3, suppressed: 2},
	{name: "wide", sent: 40, sessions: 3, pad: 400, unknown: 2, pending: 2, suppressed: 1},
}

// build writes the layout's journal at path and returns the calls to
// re-issue.
func (l sweepLayout) build(t *testing.T, path string) []harness.ToolCall {
	ctx := context.Background()
	s := mustOpen(t, path, nil)
	h := harness.New(s, &harness.Options{Retry: sweepRetry, Logger: quiet})
	var tools sweepTools
	tools.register(t, h)
	var calls []harness.ToolCall
	input := func(i, pad int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`"%d %s"`, i, bytes.Repeat([]byte("x"), pad)))
	}
	session := func(i int) string { return fmt.Sprintf("s%d", i%max(l.sessions, 1)) }
	for i := range l.sent {
		calls = append(calls, harness.ToolCall{Tenant: "acme", Session: session(i), Turn: fmt.Sprint(i), Tool: "send", Input: input(i, l.pad)})
	}
	for i := range l.unknown {
		calls = append(calls, harness.ToolCall{Tenant: "acme", Session: session(i), Turn: fmt.Sprint(100 + i), Tool: "flaky", Input: input(i, 0)})
	}
	for i := range l.suppressed {
		step := fmt.Sprintf("step-%d", i)
		calls = append(calls,
			harness.ToolCall{Tenant: "acme", Session: session(i), Turn: "x", StepKey: step, Tool: "send", Input: input(i, 0)},
			harness.ToolCall{Tenant: "acme", Session: session(i), Turn: "x", StepKey: step, Tool: "send", Input: input(i+1000, 0)})
	}
	for _, c := range calls {
		if res := h.Call(ctx, c); res.Err != nil && res.Status == harness.Rejected {
			t.Fatalf("building %s: %s: %v", l.name, c.Turn, res.Err)
		}
	}
	// Pending: the write-ahead of a call whose process stopped there.
	d := keyderive.Deriver{Namespace: s.Namespace()}
	for i := range l.pending {
		c := harness.ToolCall{Tenant: "acme", Session: session(i), Turn: fmt.Sprint(200 + i), Tool: "send", Input: input(i, 0)}
		in := keyderive.Intent{Tenant: c.Tenant, Session: c.Session, Turn: c.Turn, Tool: c.Tool}
		dv, err := d.Derive(in, c.Input)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Begin(ctx, journal.BeginRequest{Key: dv.Key, Intent: in, Fingerprint: dv.Fingerprint, Effect: journal.Unkeyed,
			Input: dv.Canonical, Owner: "gone", AttemptID: "a1", LeaseTTL: time.Minute, Durable: true}); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, c)
	}
	h.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return calls
}

// sweepAnswer is what a re-issue answered.
type sweepAnswer struct {
	status harness.Status
	output string
	err    error
	ran    int64 // the tool's runs during the call
}

// reissue opens the journal at path, re-issues calls through a harness,
// and returns the answers and how many times a tool ran; err is the open's
// error.
func reissue(t *testing.T, path string, calls []harness.ToolCall) (answers []sweepAnswer, runs int64, err error) {
	s, err := bolt.Open(path, nil)
	if err != nil {
		return nil, 0, err
	}
	defer s.Close()
	h := harness.New(s, &harness.Options{Retry: sweepRetry, Logger: quiet})
	defer h.Close()
	var tools sweepTools
	tools.register(t, h)
	for _, c := range calls {
		before := tools.runs.Load()
		res := h.Call(context.Background(), c)
		answers = append(answers, sweepAnswer{status: res.Status, output: string(res.Output), err: res.Err, ran: tools.runs.Load() - before})
	}
	return answers, tools.runs.Load(), nil
}

// sweepCounts are the corruption sweep's counts.
type sweepCounts struct {
	copies, openRefused, beginRefused, answered, reruns, silent, falseAnswers int
}

func (c sweepCounts) String() string {
	return fmt.Sprintf("%d copies: %d refused at open, %d refused at a call, %d answered; %d re-runs (%d silent), %d false answers",
		c.copies, c.openRefused, c.beginRefused, c.answered, c.reruns, c.silent, c.falseAnswers)
}

// TestDamageSweep damages small journals of several layouts by
// overwriting 16 bytes at every 256-byte offset (one copy per offset and
// fill pattern), opens each copy and re-issues every call through a real
// harness whose Unkeyed tools count their runs. Every copy either refuses
// to open, or answers each call as the undamaged journal does or with an
// error (wrapping ErrCorrupt, the damage named): no tool runs again, no
// call is answered falsely. The short form sweeps one layout with two fill
// patterns; AGENTONCE_LONG=1 sweeps three layouts with four.
func TestDamageSweep(t *testing.T) {
	patterns := map[string]func(off int) []byte{
		"zeros": func(int) []byte { return make([]byte, 16) },
		"ones":  func(int) []byte { return bytes.Repeat([]byte{0xff}, 16) },
	}
	layouts := sweepLayouts[1:2]
	if os.Getenv("AGENTONCE_LONG") != "" {
		layouts = sweepLayouts
		patterns["random"] = func(off int) []byte {
			b := make([]byte, 16)
			r := rand.New(rand.NewPCG(uint64(off), 1))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			return b
		}
		patterns["ascii"] = func(off int) []byte { return []byte(fmt.Sprintf("%016x", off*2654435761)) }
	}
	// The open checks a small file's tree; without that check, each Begin
	// that finds no record checks the indexes, as on a large file.
	for _, mode := range []struct {
		name    string
		treeMax int64
	}{{"open-check", -2}, {"begin-check-only", -1}} {
		t.Run(mode.name, func(t *testing.T) {
			if mode.treeMax != -2 {
				bolt.SetTreeCheckMax(t, mode.treeMax)
			}
			sweep(t, layouts, patterns)
		})
	}
}

func sweep(t *testing.T, layouts []sweepLayout, patterns map[string]func(off int) []byte) {
	var total sweepCounts
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			dir := t.TempDir()
			orig := filepath.Join(dir, "orig.db")
			calls := l.build(t, orig)
			pristine, err := os.ReadFile(orig)
			if err != nil {
				t.Fatal(err)
			}
			// The truth: what the undamaged journal answers.
			work := filepath.Join(dir, "copy.db")
			writeCopy(t, work, pristine)
			want, runs, err := reissue(t, work, calls)
			if err != nil || runs != 0 {
				t.Fatalf("undamaged journal: %d runs, open error %v; want 0 runs", runs, err)
			}
			for _, name := range []string{"zeros", "ones", "random", "ascii"} {
				fill, ok := patterns[name]
				if !ok {
					continue
				}
				var c sweepCounts
				for off := 0; off+16 <= len(pristine); off += 256 {
					damaged := bytes.Clone(pristine)
					copy(damaged[off:], fill(off))
					if bytes.Equal(damaged, pristine) {
						continue
					}
					writeCopy(t, work, damaged)
					c.copies++
					got, runs, err := reissue(t, work, calls)
					if err != nil {
						c.openRefused++
						continue
					}
					c.tally(t, fmt.Sprintf("%s %s offset %d", l.name, name, off), calls, want, got, runs)
				}
				t.Logf("%s, %s: %v", l.name, name, c)
				total.add(c)
			}
		})
	}
	t.Logf("all: %v", total)
	if total.reruns != 0 || total.falseAnswers != 0 {
		t.Errorf("sweep: %v; want 0 re-runs and 0 false answers", total)
	}
}

// tally counts one opened copy: its re-runs and its answers, each the
// undamaged journal's or a refusal wrapping ErrCorrupt.
func (c *sweepCounts) tally(t *testing.T, copyName string, calls []harness.ToolCall, want, got []sweepAnswer, runs int64) {
	refused := false
	wrong := 0
	for i := range got {
		if got[i].ran > 0 {
			c.reruns += int(got[i].ran)
			if got[i].err == nil {
				c.silent += int(got[i].ran)
			}
			t.Logf("%s: call %s/%s ran its tool again: %v %s (%v)", copyName, calls[i].Session, calls[i].Turn, got[i].status, got[i].output, got[i].err)
		}
		switch {
		case got[i].status == harness.Rejected && got[i].err != nil:
			refused = true
			if !errors.Is(got[i].err, journal.ErrCorrupt) {
				t.Logf("%s: call %s/%s refused with %v", copyName, calls[i].Session, calls[i].Turn, got[i].err)
			}
		case got[i].status != want[i].status || got[i].output != want[i].output:
			wrong++
			t.Logf("%s: call %s/%s answered %v %s (%v); undamaged %v %s", copyName, calls[i].Session, calls[i].Turn,
				got[i].status, got[i].output, got[i].err, want[i].status, want[i].output)
		}
	}
	c.falseAnswers += wrong
	switch {
	case refused:
		c.beginRefused++
	case wrong == 0 && runs == 0:
		c.answered++
	}
}

func (c *sweepCounts) add(o sweepCounts) {
	c.copies += o.copies
	c.openRefused += o.openRefused
	c.beginRefused += o.beginRefused
	c.answered += o.answered
	c.reruns += o.reruns
	c.silent += o.silent
	c.falseAnswers += o.falseAnswers
}

func writeCopy(t *testing.T, path string, data []byte) {
	t.Helper()
	os.Remove(path + "-pending")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A record whose key is damaged in the file (its value under another key,
// as a damaged leaf leaves it) is never taken for a new intent. A small
// file refuses to open, naming the bucket and both keys. Without that
// check (a file over its size), the Begin of the intent refuses, naming
// the key and the index entry that says a record should be there, and
// the tool does not run: for a record whose entry is in the session index
// and for one still in the fresh bucket.
func TestDamagedKeyIsNotANewIntent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	s := mustOpen(t, path, nil)
	h := harness.New(s, &harness.Options{Logger: quiet})
	var tools sweepTools
	tools.register(t, h)
	ctx := context.Background()
	var calls []harness.ToolCall
	var keys []string
	for i := range 20 { // the first 16 enter the index, the last 4 stay fresh
		c := harness.ToolCall{Tenant: "acme", Session: "s1", Turn: fmt.Sprint(i), Tool: "send", Input: json.RawMessage(fmt.Sprint(i))}
		res := h.Call(ctx, c)
		if res.Status != harness.Succeeded {
			t.Fatalf("call %d: %v %v", i, res.Status, res.Err)
		}
		calls, keys = append(calls, c), append(keys, res.Key.String())
	}
	h.Close()
	s.Close()
	for _, i := range []int{0, 19} {
		moveRecord(t, path, uuid.MustParse(keys[i]))
	}

	_, err := bolt.Open(path, nil)
	if !errors.Is(err, journal.ErrCorrupt) || !strings.Contains(err.Error(), "bucket records") || !strings.Contains(err.Error(), "agentctl verify") {
		t.Fatalf("Open of a file with a damaged key = %v; want ErrCorrupt naming the records bucket, with the verify hint", err)
	}

	bolt.SetTreeCheckMax(t, -1)
	s = mustOpen(t, path, nil)
	defer s.Close()
	h = harness.New(s, &harness.Options{Logger: quiet})
	defer h.Close()
	tools.runs.Store(0)
	tools.register(t, h)
	for i, where := range map[int]string{0: "session index", 19: "fresh bucket"} {
		res := h.Call(ctx, calls[i])
		if res.Status != harness.Rejected || !errors.Is(res.Err, journal.ErrCorrupt) ||
			!strings.Contains(res.Err.Error(), keys[i]) || !strings.Contains(res.Err.Error(), where) {
			t.Errorf("re-issue of call %d, its key damaged: %v %v; want refused, ErrCorrupt naming key %s and the %s", i, res.Status, res.Err, keys[i], where)
		}
	}
	if res := h.Call(ctx, calls[5]); res.Status != harness.Succeeded || res.Source != harness.Replayed {
		t.Errorf("re-issue of an intact call: %v from %v (%v); want replayed", res.Status, res.Source, res.Err)
	}
	if n := tools.runs.Load(); n != 0 {
		t.Fatalf("tool runs on re-issues = %d; want 0", n)
	}
}

// moveRecord moves key's record in the closed journal at path to a key one
// bit off, as a damaged key in a leaf leaves it.
func moveRecord(t *testing.T, path string, key uuid.UUID) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("records"))
		v := bytes.Clone(b.Get(key[:]))
		moved := key
		moved[15] ^= 1
		return errors.Join(b.Delete(key[:]), b.Put(moved[:], v))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkTreeCheck: the tree check an open makes of a file up to 8 MiB,
// on journals of scale records (MB/s: of the file).
func BenchmarkTreeCheck(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "j.db")
			s := mustOpen(b, path, nil)
			defer s.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			recs := make([]journal.Record, n)
			for i := range recs {
				recs[i] = scaleRecord(i, n, 0, false, rng)
			}
			if err := bolt.BulkPut(s, recs); err != nil {
				b.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(fi.Size())
			for b.Loop() {
				if err := bolt.CheckTree(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBeginNewKey: a non-durable Begin of a new key (no commit: the
// write-ahead of a Keyed call) in a session that holds n records, which
// the Begin's check of the session index reads.
func BenchmarkBeginNewKey(b *testing.B) {
	for _, n := range []int{0, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("session=%d", n), func(b *testing.B) {
			s := benchStore(b)
			rng := rand.New(rand.NewPCG(1, 2))
			recs := make([]journal.Record, n)
			for i := range recs {
				recs[i] = scaleRecord(i, max(n, 1), 0, false, rng)
				recs[i].Intent.Session = "sess-7f3a9c"
			}
			if err := bolt.BulkPut(s, recs); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Begin(ctx, benchRequest(uuid.New(), false)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A damaged namespace would give every intent a new key: the open refuses
// it (the namespace's checksum), and a journal written before the checksum
// gets it at its first writer's open.
func TestDamagedNamespace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	s := mustOpen(t, path, nil)
	h := harness.New(s, &harness.Options{Logger: quiet})
	var tools sweepTools
	tools.register(t, h)
	ctx := context.Background()
	c := harness.ToolCall{Tenant: "acme", Session: "s1", Turn: "1", Tool: "send", Input: json.RawMessage(`1`)}
	if res := h.Call(ctx, c); res.Status != harness.Succeeded {
		t.Fatalf("call: %v %v", res.Status, res.Err)
	}
	h.Close()
	s.Close()
	editMeta := func(edit func(meta *bbolt.Bucket) error) {
		t.Helper()
		db, err := bbolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Update(func(tx *bbolt.Tx) error { return edit(tx.Bucket([]byte("meta"))) }); err != nil {
			t.Fatal(err)
		}
	}
	editMeta(func(meta *bbolt.Bucket) error { return meta.Delete([]byte("namespace-sum")) })
	mustOpen(t, path, nil).Close()
	editMeta(func(meta *bbolt.Bucket) error {
		if meta.Get([]byte("namespace-sum")) == nil {
			t.Errorf("a writer's open of a journal without the namespace's checksum did not add it")
		}
		ns := bytes.Clone(meta.Get([]byte("namespace")))
		ns[15] ^= 1
		return meta.Put([]byte("namespace"), ns)
	})

	s, err := bolt.Open(path, nil)
	if err == nil {
		defer s.Close()
		h := harness.New(s, &harness.Options{Logger: quiet})
		defer h.Close()
		tools.runs.Store(0)
		tools.register(t, h)
		res := h.Call(ctx, c)
		t.Fatalf("Open with a damaged namespace succeeded; the re-issue: %v, the tool ran %d more times", res.Status, tools.runs.Load())
	}
	if !errors.Is(err, journal.ErrCorrupt) || !strings.Contains(err.Error(), "namespace") {
		t.Fatalf("Open with a damaged namespace: %v; want ErrCorrupt naming the namespace", err)
	}
}
