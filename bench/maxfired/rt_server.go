package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentonce/agentonce/bench/maxfired/worker"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

func init() {
	runtimes = append(runtimes, runtime{Name: "middleware", Plain: serverPlain, Once: serverOnce,
		How: "a net/http server whose handler charges, the process killed mid-request and started again, its client sending the request again with the same Idempotency-Key (net/http keeps no state of its own); with agentonce, the middleware on a bbolt journal whose Options.Reconcile looks the charge up in the payment service, as the application's own records would"})
}

func serverPlain(ctx context.Context, j job) (outcome, error) {
	return serve(ctx, j, chargeHandler(j))
}

func serverOnce(ctx context.Context, j job) (outcome, error) {
	store, err := bolt.Open(filepath.Join(j.Dir, "server.journal"), nil)
	if err != nil {
		return outcome{}, err
	}
	defer store.Close()
	// The application's own record of charges answers a request whose run
	// a crash cut short, as the agents' Reconcile hook does; Settle is the
	// charge's own bound, as the tool's Timeout and Settle are.
	m, err := idempotency.New(pointStore{store}, &idempotency.Options{ErrorLog: func(string, ...any) {}, Settle: 500 * time.Millisecond,
		Reconcile: func(r *http.Request, _ string) downstream.Reconciliation {
			body, err := io.ReadAll(io.LimitReader(r.Body, 1<<10))
			if err != nil {
				return downstream.CannotTell(err)
			}
			v := worker.Reconcile(r.Context(), j.Pay, body)
			out, happened := v.Happened()
			if !happened {
				return v
			}
			resp, err := idempotency.ResolvedResponse(http.StatusCreated, http.Header{"Content-Type": {"application/json"}}, out)
			if err != nil {
				return downstream.CannotTell(err)
			}
			return downstream.Happened(resp)
		}})
	if err != nil {
		return outcome{}, err
	}
	return serve(ctx, j, m.Handler(chargeHandler(j)))
}

// chargeHandler is the server's route: it charges the body's intent.
func chargeHandler(j job) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /charges", func(w http.ResponseWriter, r *http.Request) {
		var in worker.ChargeInput
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10)).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out, err := worker.DoCharge(r.Context(), j.Pay, in)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write(out)
	})
	return mux
}

// serve runs h on a loopback listener and sends it the charge request
// with the intent as its Idempotency-Key, as a client that retries does.
func serve(ctx context.Context, j job, h http.Handler) (outcome, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return outcome{}, err
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	defer srv.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+ln.Addr().String()+"/charges", strings.NewReader(worker.ChargeArgs(j.Intent)))
	if err != nil {
		return outcome{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(idempotency.KeyHeader, j.Intent)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return outcome{}, err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<16))
	if res.StatusCode == http.StatusCreated {
		return outcome{Status: "charged", Detail: string(body)}, nil
	}
	var problem struct{ Type string }
	json.Unmarshal(body, &problem)
	switch problem.Type {
	case idempotency.ProblemBase + idempotency.ProblemInFlight:
		// A retrying client waits as told: the key's run, or the check of
		// a run a crash cut short, may end meanwhile.
		if secs, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil {
			select {
			case <-time.After(min(time.Duration(secs)*time.Second, 3*time.Second)):
			case <-ctx.Done():
			}
		}
		return outcome{Status: "pending", Detail: string(body)}, nil
	case idempotency.ProblemBase + idempotency.ProblemOutcomeUnknown:
		return outcome{Status: "person", Detail: string(body)}, nil
	}
	return outcome{}, fmt.Errorf("the server answered %s: %s", res.Status, body)
}

// pointStore is a journal.Store whose writes are crash points.
type pointStore struct{ journal.Store }

func (s pointStore) Begin(ctx context.Context, req journal.BeginRequest) (journal.BeginResult, error) {
	r, err := s.Store.Begin(ctx, req)
	if err == nil {
		worker.Point("journal begin")
	}
	return r, err
}

func (s pointStore) StartAttempt(ctx context.Context, req journal.AttemptRequest) error {
	err := s.Store.StartAttempt(ctx, req)
	if err == nil {
		worker.Point("journal attempt")
	}
	return err
}

func (s pointStore) Complete(ctx context.Context, c journal.Completion) (journal.Record, error) {
	r, err := s.Store.Complete(ctx, c)
	if err == nil {
		worker.Point("journal outcome")
	}
	return r, err
}
