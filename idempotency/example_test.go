package idempotency_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
	_ "github.com/agentonce/agentonce/journal/bolt" // bbolt files
	"github.com/agentonce/agentonce/journal/memory"
)

// A charge endpoint behind the middleware: the retry of a request whose
// answer was lost is answered from the journal, and the card is charged
// once.
func Example() {
	dir, _ := os.MkdirTemp("", "idempotency-example")
	defer os.RemoveAll(dir)
	store, err := journal.Open(context.Background(), filepath.Join(dir, "server.journal"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	m, err := idempotency.New(store, &idempotency.Options{
		Tenant:  func(r *http.Request) (string, error) { return r.Header.Get("Authorization"), nil },
		Require: func(r *http.Request) bool { return true },
	})
	if err != nil {
		log.Fatal(err)
	}
	charges := 0
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		charges++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"ch_%d"}`, charges)
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, body := range []string{`{"amount":4900}`, `{ "amount": 4900 }`, `{"amount":100}`} {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/charges", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer sk_test_1")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "order-55102")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%d replayed=%q %s\n", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), strings.SplitN(string(b), ",", 2)[0])
	}
	fmt.Println("charges:", charges)
	// Output:
	// 200 replayed="" {"id":"ch_1"}
	// 200 replayed="true" {"id":"ch_1"}
	// 422 replayed="" {"type":"https://github.com/agentonce/agentonce/blob/main/docs/server.md#key-reused"
	// charges: 1
}

// wire is a server's own response, that is not an http.Header and a
// stream: it takes a replay whole through WriteReplay, and the first
// answer through the ResponseWriter methods.
type wire struct {
	h      http.Header
	status int
	lines  []string
	body   []byte
}

func (w *wire) Header() http.Header {
	if w.h == nil {
		w.h = http.Header{}
	}
	return w.h
}

func (w *wire) WriteHeader(status int) {
	w.status = status
	for k, vs := range w.h {
		for _, v := range vs {
			w.lines = append(w.lines, k+": "+v)
		}
	}
	slices.Sort(w.lines)
}

func (w *wire) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.body = append(w.body, p...)
	return len(p), nil
}

func (w *wire) WriteReplay(r idempotency.Replay) {
	w.status = r.Status
	for k, v := range r.Header() {
		w.lines = append(w.lines, string(k)+": "+string(v))
	}
	w.body = append(w.body, r.Body...)
}

// A server that holds the request body already (as fasthttp does) hands
// it to Serve, and writes a replay itself through WriteReplay.
func ExampleMiddleware_Serve() {
	dir, _ := os.MkdirTemp("", "idempotency-serve")
	defer os.RemoveAll(dir)
	store, err := journal.Open(context.Background(), filepath.Join(dir, "server.journal"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	m, err := idempotency.New(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	charge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"ch_1"}`)
	})
	body := []byte(`{"amount":4900}`) // read by the server
	for range 2 {
		r, _ := http.NewRequest("POST", "/v1/charges", nil)
		r.Pattern = "POST /v1/charges"
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", "order-55102")
		w := &wire{}
		m.Serve(w, r, body, charge)
		fmt.Println(w.status, w.lines, string(w.body))
	}
	// Output:
	// 200 [Content-Length: 13 Content-Type: application/json] {"id":"ch_1"}
	// 200 [Content-Type: application/json Idempotent-Replayed: true] {"id":"ch_1"}
}

// An operator who knows a lost first answer restores it: the resolution's
// Output is what every retry with the key is then answered, replayed.
func ExampleResolvedResponse() {
	out, err := idempotency.ResolvedResponse(http.StatusCreated,
		http.Header{"Location": {"/v1/charges/ch_1"}, "Content-Type": {"application/json"}}, []byte(`{"id":"ch_1"}`))
	if err != nil {
		log.Fatal(err)
	}
	// It settles the unknown record: store.Resolve(ctx, key,
	// journal.Resolution{State: journal.StateSucceeded, Output: out, By: "ops"}).
	fmt.Printf("%s\n", out)
	// Output:
	// agentonce-http/1 201 sha256=151e544a78199dd6d0088fd925e1f4835072a4de7eacd28fe6c87162c36bbb31
	// Content-Type: application/json
	// Location: /v1/charges/ch_1
	//
	// {"id":"ch_1"}
}

// A handler that charged and then died without answering: the retry is
// answered from the application's own data, through Options.Reconcile,
// with the answer the handler would have given; the card is charged once.
func ExampleOptions_reconcile() {
	dir, _ := os.MkdirTemp("", "idempotency-example")
	defer os.RemoveAll(dir)
	store, err := journal.Open(context.Background(), filepath.Join(dir, "server.journal"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	var mu sync.Mutex
	charges := map[string]string{} // the application's data: charge id by idempotency key
	m, err := idempotency.New(store, &idempotency.Options{
		Settle: time.Millisecond, // the handler's writes are visible once it returns
		Reconcile: func(r *http.Request, key string) downstream.Reconciliation {
			mu.Lock()
			id, ok := charges[key]
			mu.Unlock()
			if !ok {
				return downstream.DidNotHappen()
			}
			out, err := idempotency.ResolvedResponse(http.StatusCreated,
				http.Header{"Content-Type": {"application/json"}}, []byte(`{"id":"`+id+`"}`))
			if err != nil {
				return downstream.CannotTell(err)
			}
			return downstream.Happened(out)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		charges[r.Header.Get("Idempotency-Key")] = fmt.Sprintf("ch_%d", len(charges)+1)
		mu.Unlock()
		panic(http.ErrAbortHandler) // dies after the charge: the answer is lost
	})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/charges", strings.NewReader(`{"amount":4900}`))
		req.Header.Set("Idempotency-Key", "order-55102")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println("no answer")
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusConflict { // being checked: retry after Retry-After
			time.Sleep(10 * time.Millisecond)
			continue
		}
		fmt.Printf("%d replayed=%q %s\n", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), b)
		break
	}
	fmt.Println("charges:", len(charges))
	// Output:
	// no answer
	// 201 replayed="true" {"id":"ch_1"}
	// charges: 1
}

// A client of an agentonce server asks it what became of its key: the
// server's Lookup answers without running anything, and
// downstream.ServerReconcile, a harness tool's Reconcile hook, reads it.
func ExampleMiddleware_Lookup() {
	store := memory.New(nil)
	m, err := idempotency.New(store, nil)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"id":"ch_1"}`)
	})))
	mux.Handle("GET /agentonce/lookup", m.Lookup(mux))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/v1/charges", nil)
	req.Header.Set("X-Agentonce-Key", "5a3c9a3e-0000-5000-8000-000000000001")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}

	reconcile := downstream.ServerReconcile(nil, srv.URL+"/agentonce/lookup", "POST", "/v1/charges")
	for _, key := range []string{"5a3c9a3e-0000-5000-8000-000000000001", "5a3c9a3e-0000-5000-8000-000000000002"} {
		r := reconcile(context.Background(), uuid.MustParse(key), nil)
		out, ok := r.Happened()
		fmt.Printf("happened=%v %s did-not-happen=%v\n", ok, out, r.DidNotHappen())
	}
	// Output:
	// happened=true {"id":"ch_1"} did-not-happen=false
	// happened=false  did-not-happen=true
}
