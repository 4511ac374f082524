package agentoncetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/agentonce/agentonce/agentoncetest"
)

// A Downstream in front of a payment handler: the retry after a lost
// answer is replayed, and the handler charged once.
func ExampleNewDownstream() {
	charge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"charge":"ch_1"}`)
	})
	d, err := agentoncetest.NewDownstream(charge, nil)
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(d)
	defer srv.Close()

	for range 2 {
		req, _ := http.NewRequest("POST", srv.URL+"/charges", strings.NewReader(`{"cents":4900}`))
		req.Header.Set("Idempotency-Key", "order-8812")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode, "replayed:", resp.Header.Get("Idempotent-Replayed") == "true")
	}
	fmt.Println("effects:", d.Effects("order-8812"), "duplicates:", d.Duplicates())
	// Output:
	// 201 replayed: false
	// 201 replayed: true
	// effects: 1 duplicates: 0
}

// A FaultTransport loses the first response after the downstream
// committed; the client's retry with the same key gets the stored answer.
func ExampleNewFaultTransport() {
	d, _ := agentoncetest.NewDownstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"charge":"ch_1"}`)
	}), nil)
	srv := httptest.NewServer(d)
	defer srv.Close()

	ft := agentoncetest.NewFaultTransport(http.DefaultTransport, &agentoncetest.FaultOptions{
		Script: []agentoncetest.Fault{agentoncetest.LoseResponse},
	})
	client := &http.Client{Transport: ft}
	for range 2 {
		req, _ := http.NewRequest("POST", srv.URL+"/charges", strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := client.Do(req)
		if err != nil {
			var fe *agentoncetest.FaultError
			errors.As(err, &fe)
			fmt.Println("error:", fe.Fault)
			continue
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode, "replayed:", resp.Header.Get("Idempotent-Replayed"))
	}
	fmt.Println("effects:", d.Effects("k1"), "lost responses:", ft.Injected(agentoncetest.LoseResponse))
	// Output:
	// error: lose-response
	// 200 replayed: true
	// effects: 1 lost responses: 1
}

// A FaultFunc wraps a tool function: the second call is refused before it
// runs, as a dial error would refuse it.
func ExampleNewFaultFunc() {
	runs := 0
	tool := func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		runs++
		return json.RawMessage(`{"sent":true}`), nil
	}
	ff := agentoncetest.NewFaultFunc(tool, &agentoncetest.FaultOptions{
		Script: []agentoncetest.Fault{agentoncetest.NoFault, agentoncetest.ResetBeforeSend},
	})
	for range 2 {
		out, err := ff.Call(context.Background(), json.RawMessage(`{}`))
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Println("result:", string(out))
	}
	fmt.Println("runs:", runs)
	// Output:
	// result: {"sent":true}
	// error: injected reset-before-send on request 2: dial tcp tool: connect: connection refused
	// runs: 1
}

// A ScriptedModel drives an agent loop: tool calls, then, given their
// results, a final answer.
func ExampleScriptedModel() {
	script, err := agentoncetest.ParseScript([]byte(`{"turns": [{"user": "email the receipt", "steps": [
	  {"calls": [{"id": "c1", "name": "send_email", "input": {"to": "a@example.com"}}]},
	  {"expect": {"c1": "executed"}, "text": "Sent."}]}]}`))
	if err != nil {
		panic(err)
	}
	model, _ := agentoncetest.NewScriptedModel(script)
	var results []agentoncetest.ToolResult
	for {
		step, err := model.Next(context.Background(), results)
		if errors.Is(err, agentoncetest.ErrScriptDone) {
			break
		}
		if err != nil {
			panic(err)
		}
		if step.Final() {
			fmt.Println("model:", step.Text)
			results = nil
			continue
		}
		results = nil
		for _, c := range step.Calls {
			fmt.Printf("turn %s: %s %s\n", step.Turn, c.Name, c.Input)
			results = append(results, agentoncetest.ToolResult{CallID: c.ID, Status: "executed"})
		}
	}
	// Output:
	// turn 1: send_email {"to": "a@example.com"}
	// model: Sent.
}

// ParseKey reads both forms of the header: the IETF draft's Structured
// Field string and the bare token most clients send.
func ExampleParseKey() {
	for _, v := range []string{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`, "order-8812", `"open`} {
		k, err := agentoncetest.ParseKey(v)
		fmt.Printf("%q %v\n", k, err)
	}
	// Output:
	// "8e03978e-40d5-43e8-bc93-6894a57f9324" <nil>
	// "order-8812" <nil>
	// "" key "\"open": unterminated string
}

// FaultFor shows the plan of a seeded schedule without sending anything:
// the same seed gives the same plan on every run.
func ExampleFaultFor() {
	opts := &agentoncetest.FaultOptions{Seed: 42, Rate: 0.5,
		Script: []agentoncetest.Fault{agentoncetest.LoseResponse}}
	for n := 1; n <= 6; n++ {
		fmt.Println(n, agentoncetest.FaultFor(opts, n))
	}
	// Output:
	// 1 lose-response
	// 2 duplicate
	// 3 duplicate
	// 4 reset-after-send
	// 5 none
	// 6 delay
}
