package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// summary is what a demo run counted.
type summary struct {
	Asked, Charges, Duplicates, Lost, Replayed int
}

func demoMain(ctx context.Context, args []string, out io.Writer) (int, error) {
	fs := flag.NewFlagSet("payment-server", flag.ContinueOnError)
	dir := fs.String("dir", "", "keep both journals and the ledger in `DIR` (default: a temporary directory, removed)")
	loc := fs.String("journal", "", "the server's journal: a bbolt `PATH` or a postgres:// URL (default DIR/server.journal)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, err
		}
		return 0, flagError{err}
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "payment-server")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	sum, err := demo(ctx, *dir, *loc, out)
	return sum.Duplicates, err
}

// demo starts the payment server behind a proxy that loses its first two
// answers, and drives an agent's Keyed charge tool against it.
func demo(ctx context.Context, dir, loc string, out io.Writer) (summary, error) {
	var sum summary
	if loc == "" {
		loc = filepath.Join(dir, "server.journal")
	}
	store, err := journal.Open(ctx, loc, nil)
	if err != nil {
		return sum, err
	}
	defer store.Close()
	l, err := openLedger(filepath.Join(dir, "server.ledger"))
	if err != nil {
		return sum, err
	}
	defer l.close()
	before, _ := l.counts()
	h, err := newServer(store, l, serverOptions{})
	if err != nil {
		return sum, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return sum, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	proxy, err := newCutProxy(ln.Addr().String())
	if err != nil {
		return sum, err
	}
	defer proxy.close()
	proxy.cuts.Store(2)

	agent, err := agentonce.Open(ctx, filepath.Join(dir, "agent.journal"), &agentonce.OpenOptions{Options: harness.Options{
		Retry: &retryclass.Policy{InitialInterval: 20 * time.Millisecond, MaxInterval: 100 * time.Millisecond},
	}})
	if err != nil {
		return sum, err
	}
	defer agent.Close()
	client := &http.Client{Transport: &downstream.Transport{}, Timeout: 10 * time.Second}
	var replayed atomic.Int64
	err = agent.Register(harness.Tool{
		Name:   "charge_card",
		Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			var args struct {
				Amount   int    `json:"amount"`
				Currency string `json:"currency"`
			}
			if err := json.Unmarshal(in, &args); err != nil {
				return nil, retryclass.Permanent(err)
			}
			form := url.Values{"amount": {fmt.Sprint(args.Amount)}, "currency": {args.Currency}}
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, proxy.URL()+"/v1/charges", strings.NewReader(form.Encode()))
			if err != nil {
				return nil, err
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Authorization", "Bearer sk_test_demo")
			resp, err := client.Do(req)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			if err := retryclass.ResponseError(resp); err != nil {
				return nil, err
			}
			if resp.Header.Get("Idempotent-Replayed") == "true" {
				replayed.Add(1)
			}
			var charge json.RawMessage
			return charge, json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&charge)
		},
	})
	if err != nil {
		return sum, err
	}

	fmt.Fprintf(out, "payment server on %s (journal %s), reached through a proxy that loses its first 2 answers\n", ln.Addr(), loc)
	orders := []string{`{"amount":4900,"currency":"usd"}`, `{"amount":1200,"currency":"eur"}`, `{"amount":4900,"currency":"usd"}`}
	for i, in := range orders {
		call := harness.ToolCall{Tenant: "acme", Session: "order-desk", Turn: fmt.Sprint(i + 1), Tool: "charge_card", Input: json.RawMessage(in)}
		for range 2 { // the model asks twice for the same charge
			res := agent.Call(ctx, call)
			fmt.Fprintf(out, "turn %d: %s %s %s\n", i+1, res.Status, res.Source, res.ForModel())
		}
	}
	sum.Asked = len(orders)
	charges, dups := l.counts()
	sum.Charges, sum.Duplicates = charges-before, dups
	sum.Lost, sum.Replayed = int(proxy.cut.Load()), int(replayed.Load())
	fmt.Fprintf(out, "charges asked for: %d; made by the server: %d; duplicated: %d\n", sum.Asked, sum.Charges, sum.Duplicates)
	fmt.Fprintf(out, "answers lost on the wire: %d; answered again from the server's journal: %d\n", sum.Lost, sum.Replayed)
	return sum, nil
}
