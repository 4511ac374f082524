package notify_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/inspect"
	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/notify"
	"github.com/agentonce/agentonce/retryclass"
)

var secret = []byte("a test secret of 32 bytes, fine.")

// delivery is one POST a receiver got.
type delivery struct {
	header http.Header
	body   []byte
}

// receiver is a real HTTP server on loopback that records every POST and
// answers with the statuses of script in turn (200 after them), or, with
// hang, never answers until the test ends.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []delivery
	script []int
}

func newReceiver(t *testing.T, hang bool, script ...int) *receiver {
	t.Helper()
	rv := &receiver{script: script}
	release := make(chan struct{})
	rv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		rv.mu.Lock()
		rv.got = append(rv.got, delivery{r.Header.Clone(), body})
		status := http.StatusOK
		if len(rv.script) > 0 {
			status, rv.script = rv.script[0], rv.script[1:]
		}
		rv.mu.Unlock()
		if hang {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(func() {
		close(release)
		rv.Close()
	})
	return rv
}

func (rv *receiver) deliveries() []delivery {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return append([]delivery(nil), rv.got...)
}

func (rv *receiver) notices(t *testing.T) []notify.Notice {
	t.Helper()
	var out []notify.Notice
	for _, d := range rv.deliveries() {
		var n notify.Notice
		if err := json.Unmarshal(d.body, &n); err != nil {
			t.Fatalf("delivery %s is not a Notice: %v", d.body, err)
		}
		out = append(out, n)
	}
	return out
}

func newWebhook(t *testing.T, url string, o *notify.Options) *notify.Webhook {
	t.Helper()
	if o == nil {
		o = &notify.Options{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	w, err := notify.New(url, secret, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(canceled()) })
	return w
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// canceled is a context that has ended: Close gives up at once.
func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// flush closes w once every queued notice is sent or given up.
func flush(t *testing.T, w *notify.Webhook) {
	t.Helper()
	if err := w.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func needsPerson(i int) harness.Event {
	return harness.Event{Kind: harness.EventNeedsPerson, Tool: "send_email", Session: "s1", Turn: strconv.Itoa(i),
		Key: uuid.New(), Class: retryclass.MaybeExecuted, Err: errors.New("the answer was lost"), Command: "agentctl resolve …"}
}

// The notice arrives signed as documented: HMAC-SHA256 with the secret
// over the timestamp, ".", and the body. Verify accepts it, and refuses a
// tampered body, another secret, a stale timestamp and a malformed
// header, each with an error wrapping ErrSignature.
func TestSignature(t *testing.T) {
	rv := newReceiver(t, false)
	w := newWebhook(t, rv.URL, nil)
	e := needsPerson(1)
	w.Observe(context.Background(), e)
	w.Observe(context.Background(), harness.Event{Kind: harness.EventResult, Key: e.Key}) // not a person's business
	flush(t, w)
	ds := rv.deliveries()
	if len(ds) != 1 {
		t.Fatalf("deliveries = %d; want 1", len(ds))
	}
	d := ds[0]
	sig := d.header.Get(notify.SignatureHeader)
	if err := notify.Verify(secret, sig, d.body, 0); err != nil {
		t.Fatalf("Verify(the notice as sent) = %v; want nil", err)
	}
	ts, _, _ := strings.Cut(strings.TrimPrefix(sig, "t="), ",")
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts + "." + string(d.body)))
	if want := "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil)); sig != want {
		t.Errorf("%s = %q; want %q (the documented scheme)", notify.SignatureHeader, sig, want)
	}
	var n notify.Notice
	if err := json.Unmarshal(d.body, &n); err != nil {
		t.Fatal(err)
	}
	if n.Event != notify.NeedsPerson || n.Key != e.Key.String() || n.Tool != "send_email" || n.Session != "s1" || n.Turn != "1" ||
		n.Class != "maybe-executed" || n.Message != "the answer was lost" || n.Command != e.Command || n.At.IsZero() ||
		d.header.Get("Idempotency-Key") != n.ID || n.ID == "" {
		t.Errorf("notice = %+v (Idempotency-Key %q); want the event's fields, an id and the time", n, d.header.Get("Idempotency-Key"))
	}

	stale := time.Now().Add(-time.Hour).Unix()
	m.Reset()
	m.Write([]byte(strconv.FormatInt(stale, 10) + "." + string(d.body)))
	for name, tc := range map[string]struct {
		secret []byte
		header string
		body   []byte
	}{
		"tampered body":     {secret, sig, []byte(strings.Replace(string(d.body), "send_email", "send_money", 1))},
		"another secret":    {[]byte("another secret of 32 bytes, too."), sig, d.body},
		"stale":             {secret, fmt.Sprintf("t=%d,v1=%x", stale, m.Sum(nil)), d.body},
		"no header":         {secret, "", d.body},
		"no v1":             {secret, "t=" + ts, d.body},
		"not a timestamp":   {secret, "t=now," + strings.SplitN(sig, ",", 2)[1], d.body},
		"v1 not hex":        {secret, "t=" + ts + ",v1=zz", d.body},
		"truncated body":    {secret, sig, d.body[:len(d.body)-1]},
		"signature of none": {secret, "t=" + ts + ",v1=", d.body},
	} {
		if err := notify.Verify(tc.secret, tc.header, tc.body, 0); !errors.Is(err, notify.ErrSignature) {
			t.Errorf("Verify(%s) = %v; want an error wrapping ErrSignature", name, err)
		}
	}
}

// Network errors, 5xx and 429 are retried within MaxAttempts, with the
// same body and Idempotency-Key; another 4xx is not. Each notice is
// counted once: sent or failed.
func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		script   []int
		attempts int
		posts    int
		want     notify.Stats
	}{
		{"fails twice, then answers", []int{500, 503}, 0, 3, notify.Stats{Sent: 1}},
		{"busy, then answers", []int{429}, 0, 2, notify.Stats{Sent: 1}},
		{"refuses", []int{400}, 0, 1, notify.Stats{Failed: 1}},
		{"out of tries", []int{500, 500, 500}, 2, 2, notify.Stats{Failed: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rv := newReceiver(t, false, tc.script...)
			w := newWebhook(t, rv.URL, &notify.Options{MaxAttempts: tc.attempts})
			w.Observe(context.Background(), needsPerson(1))
			flush(t, w)
			ds := rv.deliveries()
			if len(ds) != tc.posts {
				t.Fatalf("POSTs = %d; want %d", len(ds), tc.posts)
			}
			for _, d := range ds[1:] {
				if string(d.body) != string(ds[0].body) || d.header.Get("Idempotency-Key") != ds[0].header.Get("Idempotency-Key") {
					t.Errorf("a retry sent %s (%s); want the first body and key", d.body, d.header.Get("Idempotency-Key"))
				}
			}
			if got := w.Stats(); got != tc.want {
				t.Errorf("Stats = %+v; want %+v", got, tc.want)
			}
		})
	}
	// A chat's webhook URL often carries its secret in the path: the log
	// names the host only.
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		host := ln.Addr().String()
		ln.Close()
		var logs strings.Builder
		var mu sync.Mutex
		w := newWebhook(t, "http://"+host+"/services/T0/B0/SECRET-TOKEN", &notify.Options{MaxAttempts: 2,
			Logger: slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
				mu.Lock()
				defer mu.Unlock()
				return logs.Write(p)
			}), nil))})
		w.Observe(context.Background(), needsPerson(1))
		flush(t, w)
		if got := w.Stats(); got != (notify.Stats{Failed: 1}) {
			t.Errorf("Stats = %+v; want one failed", got)
		}
		mu.Lock()
		defer mu.Unlock()
		if l := logs.String(); !strings.Contains(l, "gave up") || !strings.Contains(l, host) || strings.Contains(l, "SECRET-TOKEN") {
			t.Errorf("log = %q; want the give-up naming %s, not the URL's path", l, host)
		}
	})
}

// Many goroutines notify at once while the receiver never answers: no
// call waits, the queue holds at most QueueSize notices beside the one
// being sent, every other is dropped and counted, and Close with a
// deadline cuts the send off and drops the rest. Every notice is counted
// exactly once.
func TestQueueBound(t *testing.T) {
	const size, workers, each = 8, 16, 200
	rv := newReceiver(t, true)
	w := newWebhook(t, rv.URL, &notify.Options{QueueSize: size})
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for i := range each {
				w.Observe(context.Background(), needsPerson(g*each+i))
			}
		})
	}
	wg.Wait()
	total := uint64(workers * each)
	if st := w.Stats(); st.Dropped < total-size-1 || st.Sent != 0 {
		t.Errorf("after %d notices to a receiver that never answers: %+v; want at least %d dropped, none sent", total, st, total-size-1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := w.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close past its deadline = %v; want context.DeadlineExceeded", err)
	}
	st := w.Stats()
	if st.Sent+st.Failed+st.Dropped != total || st.Failed > 1 {
		t.Errorf("Stats after Close = %+v; want the %d notices counted once each, at most one failed (the one cut off)", st, total)
	}
	if n := len(rv.deliveries()); n > 1 {
		t.Errorf("the receiver got %d POSTs; want at most 1 (one notice at a time)", n)
	}
	w.Observe(context.Background(), needsPerson(0))
	if got := w.Stats().Dropped; got != st.Dropped+1 {
		t.Errorf("Dropped after a notice past Close = %d; want %d", got, st.Dropped+1)
	}
}

// openAgent is a Harness from agentonce.Open on a bbolt file, serving
// agentctl's socket, with a tool that sends a mail, loses its answer and
// has no Reconcile hook.
func openAgent(t *testing.T, obs harness.Observer) (*harness.Harness, *int) {
	t.Helper()
	h, err := agentonce.Open(context.Background(), filepath.Join(t.TempDir(), "agent.journal"), &agentonce.OpenOptions{
		Inspect: agentonce.InspectRequire,
		Options: harness.Options{Observer: obs, Logger: slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	sent := new(int)
	if err := h.Register(harness.Tool{Name: "send_email", Effect: journal.Unkeyed, Timeout: time.Second,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			*sent++
			return nil, errors.New("the mail server hung up after DATA")
		}}); err != nil {
		t.Fatal(err)
	}
	return h, sent
}

func mail(i int) harness.ToolCall {
	return harness.ToolCall{Session: "s1", Turn: "7", Tool: "send_email", Input: json.RawMessage(fmt.Sprintf(`{"to":"ana","n":%d}`, i))}
}

// A real call that ends needing a person reaches the receiver, and so
// does the operator's resolve through the agent's socket.
func TestAgentNotices(t *testing.T) {
	rv := newReceiver(t, false)
	w := newWebhook(t, rv.URL, nil)
	h, sent := openAgent(t, w)
	ctx := context.Background()
	res := h.Call(ctx, mail(1))
	if res.Status != harness.Unknown || *sent != 1 {
		t.Fatalf("Call = %v (%v), %d sent; want unknown, 1 sent", res.Status, res.Err, *sent)
	}
	c, err := inspect.Dial(ctx, agentonce.InspectSocket(h))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Resolve(ctx, res.Key, journal.Resolution{State: journal.StateSucceeded, By: "ops", Reason: "in the mail log"}); err != nil {
		t.Fatal(err)
	}
	flush(t, w)
	ns := rv.notices(t)
	if len(ns) != 2 {
		t.Fatalf("notices = %+v; want 2", ns)
	}
	k := res.Key.String()
	if n := ns[0]; n.Event != notify.NeedsPerson || n.Key != k || n.Tool != "send_email" || n.Session != "s1" || n.Turn != "7" ||
		n.Class != "maybe-executed" || !strings.Contains(n.Message, "no Reconcile hook") || !strings.HasPrefix(n.Command, "agentctl resolve "+k) {
		t.Errorf("first notice = %+v; want needs-person for %s with the reason and the command", n, k)
	}
	if n := ns[1]; n.Event != notify.Resolved || n.Key != k || n.Tool != "send_email" || n.Message != "resolved succeeded by ops: in the mail log" || n.Command != "" {
		t.Errorf("second notice = %+v; want resolved for %s, by ops", n, k)
	}
}

// A receiver that never answers holds up no call: every call is answered,
// and every notice is counted as failed or dropped.
func TestDeadReceiverBlocksNoCall(t *testing.T) {
	rv := newReceiver(t, true)
	w := newWebhook(t, rv.URL, &notify.Options{QueueSize: 2})
	h, sent := openAgent(t, w)
	const calls = 20
	for i := range calls {
		if res := h.Call(context.Background(), mail(i)); res.Status != harness.Unknown {
			t.Fatalf("call %d = %v (%v); want unknown", i, res.Status, res.Err)
		}
	}
	if err := w.Close(canceled()); err == nil {
		t.Error("Close with notices unsent = nil; want an error")
	}
	if st := w.Stats(); *sent != calls || st.Sent != 0 || st.Failed+st.Dropped != calls {
		t.Errorf("%d calls ran; Stats %+v; want %d, none sent, all failed or dropped", *sent, st, calls)
	}
}

// A request the middleware leaves unknown reaches the receiver through
// Options.OnUnknown, with the server's resolve command.
func TestServerNotice(t *testing.T) {
	rv := newReceiver(t, false)
	w := newWebhook(t, rv.URL, nil)
	store, err := journal.Open(context.Background(), filepath.Join(t.TempDir(), "server.journal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	m, err := idempotency.New(store, &idempotency.Options{OnUnknown: w.Record, ErrorLog: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", m.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(http.ErrAbortHandler) // after the charge; net/http does not log it
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/charges", strings.NewReader(`{"amount":4900}`))
	req.Header.Set("Idempotency-Key", "order-77")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	flush(t, w)
	ns := rv.notices(t)
	if len(ns) != 1 {
		t.Fatalf("notices = %+v; want 1", ns)
	}
	if n := ns[0]; n.Event != notify.NeedsPerson || n.Tool != "POST /v1/charges" || n.Session != "order-77" ||
		n.Class != idempotency.ClassPanic || !strings.Contains(n.Command, "agentctl resolve "+n.Key+" --succeeded --status CODE") {
		t.Errorf("notice = %+v; want needs-person for POST /v1/charges, order-77, class panic, the server's command", n)
	}
}

// New refuses what it cannot sign or send to, naming it.
func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		url    string
		secret []byte
		want   string
	}{
		{"", secret, `URL ""`},
		{"/hook", secret, `URL "/hook"`},
		{"ftp://example.com/hook", secret, "http or https"},
		{"https://example.com/hook", nil, "secret is 0 bytes"},
		{"https://example.com/hook", []byte("short"), "secret is 5 bytes"},
	} {
		if _, err := notify.New(tc.url, tc.secret, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q, %d bytes) = %v; want an error naming %s", tc.url, len(tc.secret), err, tc.want)
		}
	}
}
