package check

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// serveTest runs a Downstream for plan on loopback and returns its URL
// and a function that reads its history so far.
func serveTest(t *testing.T, plan *Plan) (string, *Downstream, func() []Event) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "downstream.jsonl")
	log, err := OpenLog(path, "downstream")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	d := NewDownstream(plan, log)
	url, closeFn, err := Serve(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFn)
	return url, d, func() []Event {
		events, err := ReadHistory(path)
		if err != nil {
			t.Fatal(err)
		}
		return events
	}
}

func post(ctx context.Context, t *testing.T, url, body, key string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/act", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	req.Header.Set("X-Request-Id", "w0.1#1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func TestDownstreamKeyedContract(t *testing.T) {
	plan := &Plan{Intents: []Intent{{ID: "k", Kind: Keyed, Payloads: 2,
		Script: []Action{{Do: ActOK, DelayMS: 300}, {Do: ActOK}, {Do: ActOK}, {Do: ActRefuse, Code: 417}}}}}
	url, d, _ := serveTest(t, plan)
	ctx := context.Background()
	first := make(chan string, 1)
	go func() {
		_, b, _ := post(ctx, t, url, `{"intent":"k","p":0}`, "K")
		first <- b
	}()
	time.Sleep(100 * time.Millisecond)
	if code, _, _ := post(ctx, t, url, `{"intent":"k","p":0}`, "K"); code != http.StatusConflict {
		t.Errorf("second request while the first runs: %d; want 409", code)
	}
	out := <-first
	if code, b, _ := post(ctx, t, url, `{"intent":"k","p":0}`, "K"); code != 200 || b != out {
		t.Errorf("request after the first: %d %s; want 200 and the stored %s", code, b, out)
	}
	if code, _, _ := post(ctx, t, url, `{"intent":"k","p":0}`, "K"); code != http.StatusExpectationFailed {
		t.Errorf("scripted refusal: %d; want 417", code)
	}
	if code, _, _ := post(ctx, t, url, `{"intent":"k","p":1}`, "K"); code != http.StatusUnprocessableEntity {
		t.Errorf("the key with another payload: %d; want 422", code)
	}
	if n := d.Effects(); n != 1 {
		t.Errorf("Effects() = %d; want 1", n)
	}
}

func TestDownstreamActsAfterTheClientHangsUp(t *testing.T) {
	plan := &Plan{Intents: []Intent{{ID: "u", Kind: Unkeyed, Payloads: 1,
		Script: []Action{{Do: ActOK, DelayMS: 200}, {Do: ActOK, DelayMS: 200}}}}}
	url, d, history := serveTest(t, plan)
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		if _, _, err := post(ctx, t, url, `{"intent":"u","p":0}`, ""); err == nil {
			t.Errorf("request with a 50ms deadline to a 200ms action: no error; want a timeout")
		}
		cancel()
	}
	if !d.Wait(5 * time.Second) {
		t.Fatal("downstream still acting after 5s")
	}
	// Unkeyed: no protection, each request acted although nobody waited.
	if n := d.Effects(); n != 2 {
		t.Errorf("Effects() = %d; want 2", n)
	}
	var effects, gone int
	for _, e := range history() {
		if e.Ev == EvEffect {
			effects++
		}
		if e.Ev == EvResponse && strings.Contains(e.Note, "client gone") {
			gone++
		}
	}
	if effects != 2 || gone != 2 {
		t.Errorf("history: %d effects, %d responses to a gone client; want 2, 2", effects, gone)
	}
	req, _ := http.NewRequest(http.MethodGet, url+"/effects?intent=u", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"effect":1`) {
		t.Errorf("GET /effects = %d %s; want 200 with the first effect", resp.StatusCode, b)
	}
}

func TestDownstreamLosesTheAnswerAfterCommitting(t *testing.T) {
	plan := &Plan{Intents: []Intent{{ID: "l", Kind: Keyed, Payloads: 1, Script: []Action{{Do: ActLose}}}}}
	url, d, _ := serveTest(t, plan)
	if _, _, err := post(context.Background(), t, url, `{"intent":"l","p":0}`, "L"); err == nil {
		t.Errorf("a lost answer: no error; want a connection error")
	}
	if n := d.Effects(); n != 1 {
		t.Errorf("Effects() = %d; want 1", n)
	}
	if code, b, _ := post(context.Background(), t, url, `{"intent":"l","p":0}`, "L"); code != 200 || !strings.Contains(b, `"effect":1`) {
		t.Errorf("retry after a lost answer: %d %s; want 200 with effect 1", code, b)
	}
}

// TestDownstreamDedupesByKeyAlone: the downstream keeps the
// Idempotency-Key contract by the key, as a real server does: one intent
// sent under two keys acts twice, and a key reused for another intent is
// refused with 422.
func TestDownstreamDedupesByKeyAlone(t *testing.T) {
	plan := &Plan{Intents: []Intent{{ID: "k", Kind: Keyed, Payloads: 1}, {ID: "j", Kind: Keyed, Payloads: 1}}}
	url, d, history := serveTest(t, plan)
	ctx := context.Background()
	_, first, _ := post(ctx, t, url, `{"intent":"k","p":0}`, "K1")
	if code, b, _ := post(ctx, t, url, `{"intent":"k","p":0}`, "K1"); code != 200 || b != first {
		t.Errorf("the same key again: %d %s; want 200 and the stored %s", code, b, first)
	}
	if code, b, _ := post(ctx, t, url, `{"intent":"k","p":0}`, "K2"); code != 200 || b == first {
		t.Errorf("another key for the same intent: %d %s; want 200 and a second effect", code, b)
	}
	if code, _, _ := post(ctx, t, url, `{"intent":"j","p":0}`, "K1"); code != http.StatusUnprocessableEntity {
		t.Errorf("K1 reused for another intent: %d; want 422", code)
	}
	if n := d.Effects(); n != 2 {
		t.Errorf("Effects() = %d; want 2 (one per key)", n)
	}
	if rep := Check(plan, history()); len(rep.Violations) == 0 || !slices.ContainsFunc(rep.Violations, func(v Violation) bool { return v.Rule == RuleKeys && v.Intent == "k" }) {
		t.Errorf("Check found %+v; want %s for intent k", rep.Violations, RuleKeys)
	}
}
