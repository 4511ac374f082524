package agentoncetest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentonce/agentonce/agentoncetest"
)

// charges is a payment handler with a real side effect: a counter of
// charges made. It answers each charge with its sequence number.
type charges struct {
	n atomic.Int64
}

func (c *charges) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		fmt.Fprintf(w, `{"charges":%d}`, c.n.Load())
		return
	}
	body, _ := io.ReadAll(r.Body)
	id := c.n.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"charge":%d,"request":%s}`, id, body)
}

type reply struct {
	status   int
	replayed bool
	body     string
	ctype    string
}

func do(t *testing.T, c *http.Client, method, url, key, body string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s (key %q): %v", method, url, key, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header.Get("Idempotent-Replayed") == "true", string(b), resp.Header.Get("Content-Type")}
}

func TestDownstreamContract(t *testing.T) {
	h := &charges{}
	srv := agentoncetest.NewServer(t, h, nil)
	c := srv.Client()
	d := srv.Downstream

	// Each step runs against the state the steps before left.
	steps := []struct {
		name                string
		method, path, key   string
		body                string
		status              int
		replayed            bool
		bodyHas             string
		effects, duplicates int
	}{
		{"first request runs", "POST", "/charges", "k1", `{"cents":4900}`, 201, false, `"charge":1`, 1, 0},
		{"same key, same payload replays", "POST", "/charges", "k1", `{"cents":4900}`, 201, true, `"charge":1`, 1, 0},
		{"quoted sf-string key is the same key", "POST", "/charges", `"k1"`, `{"cents":4900}`, 201, true, `"charge":1`, 1, 0},
		{"same key, other body is 422", "POST", "/charges", "k1", `{"cents":5000}`, 422, false, "already used", 1, 0},
		{"same key, other path is 422", "POST", "/refunds", "k1", `{"cents":4900}`, 422, false, "already used", 1, 0},
		{"same key, other query is 422", "POST", "/charges?capture=false", "k1", `{"cents":4900}`, 422, false, "already used", 1, 0},
		{"missing key on POST is 400", "POST", "/charges", "", `{"cents":4900}`, 400, false, "is missing", 1, 0},
		{"malformed key is 400", "POST", "/charges", `"unterminated`, `{}`, 400, false, "unterminated", 1, 0},
		{"GET passes through", "GET", "/charges", "", "", 200, false, `"charges":1`, 1, 0},
		{"new key runs", "POST", "/charges", "k2", `{"cents":4900}`, 201, false, `"charge":2`, 2, 0},
		{"PUT without key is not required and runs", "PUT", "/charges/x", "", `{}`, 201, false, `"charge":3`, 3, 0},
	}
	for _, s := range steps {
		got := do(t, c, s.method, srv.URL+s.path, s.key, s.body)
		if got.status != s.status || got.replayed != s.replayed || !strings.Contains(got.body, s.bodyHas) {
			t.Errorf("%s: %s %s key %q = %d replayed=%v %s; want %d replayed=%v containing %q",
				s.name, s.method, s.path, s.key, got.status, got.replayed, got.body, s.status, s.replayed, s.bodyHas)
		}
		if got.status >= 400 && got.ctype != "application/problem+json" {
			t.Errorf("%s: Content-Type = %q; want application/problem+json", s.name, got.ctype)
		}
		if e, dup := d.TotalEffects(), d.Duplicates(); e != s.effects || dup != s.duplicates {
			t.Errorf("%s: TotalEffects() = %d, Duplicates() = %d; want %d, %d", s.name, e, dup, s.effects, s.duplicates)
		}
	}
	if got := d.Effects("k1"); got != 1 {
		t.Errorf("Effects(k1) = %d; want 1", got)
	}
	if got := h.n.Load(); got != 3 {
		t.Errorf("handler ran %d charges; want 3", got)
	}
}

func TestDownstreamProblemDetails(t *testing.T) {
	srv := agentoncetest.NewServer(t, &charges{}, nil)
	got := do(t, srv.Client(), "POST", srv.URL+"/charges", "", `{}`)
	var p struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal([]byte(got.body), &p); err != nil {
		t.Fatalf("problem body %q: %v", got.body, err)
	}
	if p.Status != 400 || p.Type != agentoncetest.ProblemType || p.Title == "" || p.Detail == "" {
		t.Errorf("problem = %+v; want status 400, type %s, a title and a detail", p, agentoncetest.ProblemType)
	}
}

func TestDownstreamBadRequests(t *testing.T) {
	srv := agentoncetest.NewServer(t, &charges{}, &agentoncetest.DownstreamOptions{MaxBodyBytes: 16})
	c := srv.Client()

	req, _ := http.NewRequest("POST", srv.URL+"/charges", strings.NewReader(`{}`))
	req.Header.Add("Idempotency-Key", "a")
	req.Header.Add("Idempotency-Key", "b")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("two Idempotency-Key fields: status %d; want 400", resp.StatusCode)
	}
	if got := do(t, c, "POST", srv.URL+"/charges", "big", strings.Repeat("x", 17)); got.status != 413 {
		t.Errorf("17-byte body over a 16-byte limit: status %d; want 413", got.status)
	}
	if got := do(t, c, "POST", srv.URL+"/charges", "big", strings.Repeat("x", 16)); got.status != 201 {
		t.Errorf("16-byte body at a 16-byte limit: status %d; want 201 (the refused request must not hold the key)", got.status)
	}
	if n := srv.Downstream.TotalEffects(); n != 1 {
		t.Errorf("TotalEffects() = %d; want 1", n)
	}
}

func TestDownstreamConflictWhileProcessing(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	var once sync.Once
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(started) })
		<-release
		w.Write([]byte(`{"ok":true}`))
	})
	srv := agentoncetest.NewServer(t, h, nil)
	c := srv.Client()
	first := make(chan reply)
	go func() { first <- do(t, c, "POST", srv.URL+"/x", "k", `{}`) }()
	<-started
	if got := do(t, c, "POST", srv.URL+"/x", "k", `{}`); got.status != http.StatusConflict {
		t.Errorf("same key while the first runs: status %d; want 409", got.status)
	}
	if got := do(t, c, "POST", srv.URL+"/x", "k", `{"other":1}`); got.status != http.StatusUnprocessableEntity {
		t.Errorf("same key, other payload, while the first runs: status %d; want 422", got.status)
	}
	close(release)
	if got := <-first; got.status != 200 || got.replayed {
		t.Errorf("first request = %d replayed=%v; want 200 not replayed", got.status, got.replayed)
	}
	if got := do(t, c, "POST", srv.URL+"/x", "k", `{}`); got.status != 200 || !got.replayed {
		t.Errorf("after the first finished = %d replayed=%v; want 200 replayed", got.status, got.replayed)
	}
	if e := srv.Downstream.Effects("k"); e != 1 {
		t.Errorf("Effects(k) = %d; want 1", e)
	}
}

// clock is a settable clock for DownstreamOptions.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestDownstreamTTL(t *testing.T) {
	clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	srv := agentoncetest.NewServer(t, &charges{}, &agentoncetest.DownstreamOptions{TTL: time.Hour, Now: clk.Now})
	c := srv.Client()
	do(t, c, "POST", srv.URL+"/charges", "k", `{}`)
	clk.Advance(time.Hour - time.Nanosecond)
	if got := do(t, c, "POST", srv.URL+"/charges", "k", `{}`); !got.replayed {
		t.Errorf("just before the TTL: replayed=%v; want true", got.replayed)
	}
	clk.Advance(time.Nanosecond)
	if got := do(t, c, "POST", srv.URL+"/charges", "k", `{"new":"payload is fine after expiry"}`); got.replayed || got.status != 201 {
		t.Errorf("at the TTL: %d replayed=%v; want 201, run anew", got.status, got.replayed)
	}
	// A late call after expiry runs anew: the downstream counts it as a
	// second effect of the key, which is what happened.
	if e, dup := srv.Downstream.Effects("k"), srv.Downstream.Duplicates(); e != 2 || dup != 1 {
		t.Errorf("Effects(k), Duplicates() = %d, %d; want 2, 1", e, dup)
	}
}

func TestDownstreamServerErrors(t *testing.T) {
	for _, store := range []bool{false, true} {
		t.Run(fmt.Sprintf("StoreServerErrors=%v", store), func(t *testing.T) {
			var calls atomic.Int64
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) == 1 {
					http.Error(w, "database down", http.StatusInternalServerError)
					return
				}
				w.Write([]byte("ok"))
			})
			srv := agentoncetest.NewServer(t, h, &agentoncetest.DownstreamOptions{StoreServerErrors: store})
			c := srv.Client()
			if got := do(t, c, "POST", srv.URL, "k", "{}"); got.status != 500 {
				t.Fatalf("first = %d; want 500", got.status)
			}
			got := do(t, c, "POST", srv.URL, "k", "{}")
			wantStatus, wantCalls, wantEffects := 200, 2, 1
			if store {
				wantStatus, wantCalls, wantEffects = 500, 1, 0
			}
			if got.status != wantStatus || got.replayed != store {
				t.Errorf("retry = %d replayed=%v; want %d replayed=%v", got.status, got.replayed, wantStatus, store)
			}
			if n, e := srv.Downstream.Calls("k"), srv.Downstream.Effects("k"); n != wantCalls || e != wantEffects {
				t.Errorf("Calls(k), Effects(k) = %d, %d; want %d, %d", n, e, wantCalls, wantEffects)
			}
		})
	}
}

func TestDownstreamClientScope(t *testing.T) {
	srv := agentoncetest.NewServer(t, &charges{}, &agentoncetest.DownstreamOptions{
		ClientID: func(r *http.Request) string { return r.Header.Get("X-Client") },
	})
	post := func(client string) reply {
		req, _ := http.NewRequest("POST", srv.URL+"/charges", strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "shared")
		req.Header.Set("X-Client", client)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return reply{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed") == "true", body: string(b)}
	}
	a1, b1, a2 := post("a"), post("b"), post("a")
	if a1.replayed || b1.replayed || !a2.replayed {
		t.Errorf("replayed: a=%v b=%v a again=%v; want false false true", a1.replayed, b1.replayed, a2.replayed)
	}
	if b1.body == a1.body {
		t.Errorf("client b got client a's stored response %s", a1.body)
	}
	if e, dup := srv.Downstream.Effects("shared"), srv.Downstream.Duplicates(); e != 2 || dup != 0 {
		t.Errorf("Effects(shared), Duplicates() = %d, %d; want 2, 0", e, dup)
	}
}

func TestDownstreamPassthrough(t *testing.T) {
	h := &charges{}
	srv := agentoncetest.NewServer(t, h, &agentoncetest.DownstreamOptions{Passthrough: true})
	c := srv.Client()
	a := do(t, c, "POST", srv.URL+"/emails", "k", `{"to":"a"}`)
	b := do(t, c, "POST", srv.URL+"/emails", "k", `{"to":"a"}`)
	x := do(t, c, "POST", srv.URL+"/emails", "", `{"to":"b"}`)
	if a.replayed || b.replayed || a.body == b.body || x.status != 201 {
		t.Errorf("passthrough: %v, %v, %v; want three fresh 201s", a, b, x)
	}
	d := srv.Downstream
	if e, dup, tot := d.Effects("k"), d.Duplicates(), d.TotalEffects(); e != 2 || dup != 1 || tot != 3 {
		t.Errorf("Effects(k), Duplicates(), TotalEffects() = %d, %d, %d; want 2, 1, 3", e, dup, tot)
	}
}

func TestDownstreamPanicReleasesKey(t *testing.T) {
	var calls atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			panic(http.ErrAbortHandler)
		}
		w.Write([]byte("ok"))
	})
	srv := agentoncetest.NewServer(t, h, nil)
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader("{}"))
	req.Header.Set("Idempotency-Key", "k")
	if resp, err := srv.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a panicking handler answered %d; want the connection aborted", resp.StatusCode)
	}
	if got := do(t, srv.Client(), "POST", srv.URL, "k", "{}"); got.status != 200 || got.replayed {
		t.Errorf("after a panic = %d replayed=%v; want 200, run anew", got.status, got.replayed)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("handler ran %d times; want 2", n)
	}
}

// TestDownstreamHammer sends many concurrent requests over a few keys and
// checks the invariants: one effect per key, every answer a 2xx (first
// or replay) or a 409.
func TestDownstreamHammer(t *testing.T) {
	h := &charges{}
	srv := agentoncetest.NewServer(t, h, nil)
	const keys, perKey = 8, 25
	var wg sync.WaitGroup
	var bad atomic.Int64
	for k := range keys {
		for range perKey {
			wg.Go(func() {
				req, _ := http.NewRequest("POST", srv.URL+"/charges", strings.NewReader(`{"k":`+fmt.Sprint(k)+`}`))
				req.Header.Set("Idempotency-Key", fmt.Sprint("key-", k))
				resp, err := srv.Client().Do(req)
				if err != nil {
					bad.Add(1)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 201 && resp.StatusCode != 409 {
					bad.Add(1)
				}
			})
		}
	}
	wg.Wait()
	if n := bad.Load(); n != 0 {
		t.Errorf("%d requests failed or got a status other than 201/409", n)
	}
	d := srv.Downstream
	if e, dup, k := d.TotalEffects(), d.Duplicates(), d.Keys(); e != keys || dup != 0 || k != keys {
		t.Errorf("TotalEffects, Duplicates, Keys = %d, %d, %d; want %d, 0, %d", e, dup, k, keys, keys)
	}
	if n := h.n.Load(); n != keys {
		t.Errorf("handler charged %d times; want %d", n, keys)
	}
}

func TestDownstreamStateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "downstream.json")
	opts := &agentoncetest.DownstreamOptions{StateFile: path}
	srv := agentoncetest.NewServer(t, &charges{}, opts)
	first := do(t, srv.Client(), "POST", srv.URL+"/charges", "k", `{"cents":1}`)
	do(t, srv.Client(), "PUT", srv.URL+"/charges/2", "", `{"cents":2}`) // keyless PUT, counted under ""
	srv.Close()

	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("state file not written: %v", err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Errorf("state file mode %v; want 0600", m)
	}

	// A new process: a fresh handler, the same state file.
	h2 := &charges{}
	srv2 := agentoncetest.NewServer(t, h2, opts)
	again := do(t, srv2.Client(), "POST", srv2.URL+"/charges", "k", `{"cents":1}`)
	if !again.replayed || again.body != first.body {
		t.Errorf("after restart = %q replayed=%v; want %q replayed", again.body, again.replayed, first.body)
	}
	if got := do(t, srv2.Client(), "POST", srv2.URL+"/charges", "k", `{"cents":9}`); got.status != 422 {
		t.Errorf("after restart, other payload: status %d; want 422", got.status)
	}
	d := srv2.Downstream
	if e, tot, dup := d.Effects("k"), d.TotalEffects(), d.Duplicates(); e != 1 || tot != 2 || dup != 0 || h2.n.Load() != 0 {
		t.Errorf("after restart: Effects(k)=%d TotalEffects=%d Duplicates=%d handler=%d; want 1, 2, 0, 0", e, tot, dup, h2.n.Load())
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".downstream.json.tmp*")); len(m) != 0 {
		t.Errorf("temp files left behind: %v", m)
	}
}

func TestDownstreamBadStateFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, content string }{
		{"garbage", "not json"},
		{"version", `{"version":99}`},
		{"fingerprint", `{"version":1,"entries":[{"key":"k","fingerprint":"zz"}]}`},
	} {
		path := filepath.Join(dir, tc.name+".json")
		os.WriteFile(path, []byte(tc.content), 0o600)
		_, err := agentoncetest.NewDownstream(&charges{}, &agentoncetest.DownstreamOptions{StateFile: path})
		if !errors.Is(err, agentoncetest.ErrBadState) || !strings.Contains(err.Error(), path) {
			t.Errorf("NewDownstream(state %s) error = %v; want ErrBadState naming the file", tc.content, err)
		}
	}
}

func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"8e03978e-40d5-43e8-bc93-6894a57f9324", "8e03978e-40d5-43e8-bc93-6894a57f9324", true},
		{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`, "8e03978e-40d5-43e8-bc93-6894a57f9324", true},
		{`"a\"b\\c"`, `a"b\c`, true},
		{"  spaced  ", "spaced", true},
		{"", "", false},
		{`""`, "", false},
		{`"open`, "", false},
		{`"a"b`, "", false},
		{`"a\nb"`, "", false},
		{"caf\xc3\xa9", "", false},
		{strings.Repeat("k", 255), strings.Repeat("k", 255), true},
		{strings.Repeat("k", 256), "", false},
	} {
		got, err := agentoncetest.ParseKey(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseKey(%q) = %q, %v; want %q, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"k", `"k"`, `"a\"b"`, `"`, `\`, ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		k, err := agentoncetest.ParseKey(in)
		if err != nil {
			return
		}
		if k == "" || len(k) > agentoncetest.MaxKeyLength {
			t.Fatalf("ParseKey(%q) = %q: empty or too long", in, k)
		}
		// Quoting an accepted key as an sf-string must give it back.
		q := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(k) + `"`
		if k2, err := agentoncetest.ParseKey(q); err != nil || k2 != k {
			t.Fatalf("ParseKey(%q) = %q, %v; want %q (round trip of %q)", q, k2, err, k, in)
		}
	})
}

// TestDownstreamTTLSynctest checks expiry on the default clock, in a
// synctest bubble where time.Now is fake: no Now seam, no sleeping.
func TestDownstreamTTLSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, err := agentoncetest.NewDownstream(&charges{}, &agentoncetest.DownstreamOptions{TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		post := func() (int, bool) {
			req := httptest.NewRequest("POST", "/charges", strings.NewReader(`{}`))
			req.Header.Set("Idempotency-Key", "k")
			w := httptest.NewRecorder()
			d.ServeHTTP(w, req)
			return w.Code, w.Header().Get("Idempotent-Replayed") == "true"
		}
		for _, step := range []struct {
			wait     time.Duration
			replayed bool
		}{{0, false}, {time.Hour - time.Second, true}, {time.Second, false}, {time.Minute, true}} {
			time.Sleep(step.wait)
			if code, replayed := post(); code != 201 || replayed != step.replayed {
				t.Errorf("after %v more: %d replayed=%v; want 201 replayed=%v", step.wait, code, replayed, step.replayed)
			}
		}
		if e := d.Effects("k"); e != 2 {
			t.Errorf("Effects(k) = %d; want 2 (one per TTL window)", e)
		}
	})
}

// FuzzStateFile feeds arbitrary bytes as a state file: NewDownstream must
// load them or refuse them with an error naming the file, never panic,
// and a loaded state must serve a replay without panicking.
func FuzzStateFile(f *testing.F) {
	f.Add([]byte(`{"version":1,"entries":[{"key":"k","fingerprint":"` + strings.Repeat("ab", 32) + `","status":201,"body":"e30="}],"counts":[{"key":"k","effects":1,"calls":1}]}`))
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":1,"entries":[{"key":"k","fingerprint":"00","status":5}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "state.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		d, err := agentoncetest.NewDownstream(&charges{}, &agentoncetest.DownstreamOptions{StateFile: path})
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v does not name the file", err)
			}
			return
		}
		req := httptest.NewRequest("POST", "/charges", strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "k")
		d.ServeHTTP(httptest.NewRecorder(), req)
		if d.Duplicates() < 0 || d.TotalEffects() < 0 {
			t.Fatalf("negative counts after loading %q", data)
		}
	})
}
