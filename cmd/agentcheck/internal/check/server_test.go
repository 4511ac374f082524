package check

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentonce/agentonce/journal"
)

// serveMiddlewareTest runs the middleware downstream for plan on a bbolt
// journal in a temporary directory.
func serveMiddlewareTest(t *testing.T, plan *Plan, o ServerOptions) (string, *Downstream) {
	t.Helper()
	dir := t.TempDir()
	log, err := OpenLog(filepath.Join(dir, "downstream.jsonl"), "downstream")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	store, err := journal.Open(context.Background(), filepath.Join(dir, "server.journal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	d, err := NewMiddlewareDownstream(plan, log, store, o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	url, closeFn, err := Serve(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFn)
	return url, d
}

// TestMiddlewareDownstream sends one Keyed request, then its retry, for each
// first action, and counts the effects: the script's faults come after the
// middleware has recorded its answer, so a retry is replayed, except where
// the handler's own 5xx tells the middleware that nothing was committed.
func TestMiddlewareDownstream(t *testing.T) {
	tests := []struct {
		name    string
		first   Action
		o       ServerOptions
		code    int // the first request's answer; 0: no answer
		retry   int // the retry's
		effects int
		replay  bool // the retry gets the first effect's output
	}{
		{"gateway 502 after the effect", Action{Do: ActFailAfter, Code: 502}, ServerOptions{}, 502, 200, 1, true},
		{"lost after the effect", Action{Do: ActLose}, ServerOptions{}, 0, 200, 1, true},
		{"late", Action{Do: ActLate, AfterMS: 20}, ServerOptions{}, 200, 200, 1, true},
		{"417 before the middleware", Action{Do: ActRefuse, Code: 417}, ServerOptions{}, 417, 200, 1, false},
		{"handler's 503, nothing committed", Action{Do: ActRefuse, Code: 503}, ServerOptions{}, 503, 200, 1, false},
		// The middleware's precondition broken on purpose: a handler that
		// committed and answered 5xx runs again.
		{"handler's 500 after the effect", Action{Do: ActFailAfter, Code: 500}, ServerOptions{HandlerFailAfter: true}, 500, 200, 2, false},
		{"handler's 500 after the effect, stored", Action{Do: ActFailAfter, Code: 500}, ServerOptions{HandlerFailAfter: true, StoreServerErrors: true}, 500, 500, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := &Plan{Intents: []Intent{{ID: "k", Kind: Keyed, Payloads: 1, Script: []Action{tt.first}}}}
			url, d := serveMiddlewareTest(t, plan, tt.o)
			ctx := context.Background()
			code, first, err := post(ctx, t, url, `{"intent":"k","p":0}`, "K")
			if tt.code == 0 && err == nil {
				t.Errorf("first request: %d %s; want the connection dropped", code, first)
			} else if tt.code != 0 && code != tt.code {
				t.Errorf("first request: %d %s (%v); want %d", code, first, err, tt.code)
			}
			code, retry, err := post(ctx, t, url, `{"intent":"k","p":0}`, "K")
			if code != tt.retry {
				t.Errorf("retry: %d %s (%v); want %d", code, retry, err, tt.retry)
			}
			d.Wait(5 * time.Second)
			if n := d.Effects(); n != tt.effects {
				t.Errorf("%d effects; want %d", n, tt.effects)
			}
			if want := string(d.effects["k"][0]); tt.replay && retry != want {
				t.Errorf("retry answered %s; want the first effect's output %s", retry, want)
			}
			if code, _, _ := post(ctx, t, url, `{"intent":"k","p":1}`, "K"); code != 422 {
				t.Errorf("the key with another payload: %d; want 422", code)
			}
		})
	}
}
