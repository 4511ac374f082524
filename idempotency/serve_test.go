package idempotency_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
)

// replayRecorder is a ResponseRecorder that takes a replay whole, as a
// server other than net/http's does, writing it as Replay's doc says.
type replayRecorder struct {
	*httptest.ResponseRecorder
	replays int
}

func (w *replayRecorder) WriteReplay(r idempotency.Replay) {
	w.replays++
	h := w.Header()
	var prev string
	for k, v := range r.Header() {
		if name := string(k); name != prev {
			h[name], prev = nil, name
		}
		h[string(k)] = append(h[string(k)], string(v))
	}
	w.WriteHeader(r.Status)
	w.Write(r.Body)
}

// unread is a request body that must not be read: Serve has it already.
type unread struct{ t *testing.T }

func (u unread) Read([]byte) (int, error) {
	u.t.Error("Serve read r.Body")
	return 0, io.EOF
}

func (unread) Close() error { return nil }

// Serve answers as Handler does with the body it is given, never reading
// r.Body: the handler reads the body from r.Body, the first answer goes
// through the ResponseWriter, a replay to WriteReplay with the headers a
// Handler replay sends (less Content-Length), and to a writer that is no
// ReplayWriter as Handler sends it; another body gets 422, a body over
// MaxBodyBytes 413, and the handler runs once.
func TestServe(t *testing.T) {
	stores(t, func(t *testing.T, open func() journal.Store) {
		const body = `{"amount":4900}`
		m, err := idempotency.New(open(), &idempotency.Options{MaxBodyBytes: 64})
		if err != nil {
			t.Fatal(err)
		}
		runs := 0
		next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			runs++
			if b, _ := io.ReadAll(r.Body); string(b) != body {
				t.Errorf("the handler read %q from r.Body; want %q", b, body)
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Location", "/v1/charges/ch_1")
			w.Header()["Vary"] = []string{"Accept", "Origin"}
			w.Header().Set("Set-Cookie", "session=secret")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"id":"ch_1"}`)
		})
		serve := func(w http.ResponseWriter, payload string) {
			r := httptest.NewRequestWithContext(context.Background(), "POST", "/v1/charges/ch_1", unread{t})
			r.Pattern = "POST /v1/charges/{id}"
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Idempotency-Key", "k1")
			m.Serve(w, r, []byte(payload), next)
		}

		first := &replayRecorder{ResponseRecorder: httptest.NewRecorder()}
		serve(first, body)
		if first.Code != 201 || first.replays != 0 || first.Body.String() != `{"id":"ch_1"}` || first.Header().Get("Set-Cookie") == "" {
			t.Fatalf("first = %d %v %q after %d replays; want 201 with the handler's headers, not a replay",
				first.Code, first.Header(), first.Body, first.replays)
		}
		again := &replayRecorder{ResponseRecorder: httptest.NewRecorder()}
		serve(again, ` { "amount": 4900 } `)
		plain := httptest.NewRecorder()
		serve(plain, body)
		want := http.Header{"Content-Type": {"application/json"}, "Location": {"/v1/charges/ch_1"},
			"Vary": {"Accept", "Origin"}, "Idempotent-Replayed": {"true"}}
		if again.replays != 1 || again.Code != 201 || again.Body.String() != first.Body.String() || !reflect.DeepEqual(again.Header(), want) {
			t.Errorf("replay = %d %v %q after %d replays; want 201 %v %q through WriteReplay",
				again.Code, again.Header(), again.Body, again.replays, want, first.Body)
		}
		want["Content-Length"] = []string{"13"}
		if plain.Code != 201 || plain.Body.String() != first.Body.String() || !reflect.DeepEqual(plain.Header(), want) {
			t.Errorf("replay to a plain writer = %d %v %q; want 201 %v %q", plain.Code, plain.Header(), plain.Body, want, first.Body)
		}

		other := &replayRecorder{ResponseRecorder: httptest.NewRecorder()}
		serve(other, `{"amount":100}`)
		large := &replayRecorder{ResponseRecorder: httptest.NewRecorder()}
		r := httptest.NewRequestWithContext(context.Background(), "POST", "/v1/charges/ch_2", unread{t})
		r.Header.Set("Idempotency-Key", "k2")
		m.Serve(large, r, bytes.Repeat([]byte("a"), 65), next)
		for _, c := range []struct {
			name   string
			got    *replayRecorder
			status int
			kind   string
		}{{"another body", other, 422, idempotency.ProblemKeyReused}, {"a body over MaxBodyBytes", large, 413, idempotency.ProblemBodyTooLarge}} {
			if c.got.Code != c.status || c.got.replays != 0 || !strings.Contains(c.got.Body.String(), c.kind) {
				t.Errorf("%s = %d %s; want %d %s", c.name, c.got.Code, c.got.Body, c.status, c.kind)
			}
		}
		if runs != 1 {
			t.Errorf("the handler ran %d times; want 1", runs)
		}
	})
}
