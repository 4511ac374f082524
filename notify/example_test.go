package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/notify"
)

// An agent whose mail tool loses an answer and has no Reconcile hook: the
// call is answered unknown, and the on-call's endpoint is told, signed,
// with the command that settles it.
func Example() {
	secret := []byte("whsec_0123456789abcdef")

	// The receiver: a chat bridge or a pager's endpoint.
	var mu sync.Mutex
	var told []notify.Notice
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err := notify.Verify(secret, r.Header.Get(notify.SignatureHeader), body, 0); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var n notify.Notice
		if err := json.Unmarshal(body, &n); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		told = append(told, n)
		mu.Unlock()
	}))
	defer receiver.Close()

	// The agent.
	wh, err := notify.New(receiver.URL, secret, nil)
	if err != nil {
		log.Fatal(err)
	}
	dir, _ := os.MkdirTemp("", "notify-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	h, err := agentonce.Open(ctx, filepath.Join(dir, "agent.journal"), &agentonce.OpenOptions{
		Options: harness.Options{Observer: wh, Logger: slog.New(slog.DiscardHandler)}})
	if err != nil {
		log.Fatal(err)
	}
	h.Register(harness.Tool{Name: "send_email", Effect: journal.Unkeyed,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, errors.New("the mail server hung up after DATA")
		}})
	res := h.Call(ctx, harness.ToolCall{Session: "s1", Turn: "1", Tool: "send_email", Input: json.RawMessage(`{"to":"ana"}`)})
	fmt.Println("the agent is told:", res.Status)
	h.Close()
	wh.Close(ctx) // sends what is queued

	mu.Lock()
	defer mu.Unlock()
	for _, n := range told {
		fmt.Println("the on-call is told:", n.Event, n.Tool, strings.Replace(n.Command, n.Key, "KEY", 1))
	}
	// Output:
	// the agent is told: unknown
	// the on-call is told: needs-person send_email agentctl resolve KEY --succeeded [--output JSON] | --failed --reason TEXT
}

// A receiver checks a notice's signature on the raw body before it reads
// it: a body that is not the one signed is refused.
func ExampleVerify() {
	secret := []byte("whsec_0123456789abcdef")
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err == nil {
			err = notify.Verify(secret, r.Header.Get(notify.SignatureHeader), body, 0)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/hooks/agentonce", strings.NewReader(`{"event":"needs-person"}`))
	r.Header.Set(notify.SignatureHeader, fmt.Sprintf("t=%d,v1=00", time.Now().Unix())) // a forgery
	handler.ServeHTTP(rec, r)
	fmt.Print(rec.Code, " ", rec.Body.String())
	// Output:
	// 401 notify: bad signature: the body does not match its signature
}
