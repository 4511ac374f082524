package mcpgo_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/adapters/mcpgo"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal/memory"
	"github.com/agentonce/agentonce/retryclass"
)

// tasksVersion is the protocol revision that brought tasks; a raw request
// at the latest revision would need the per-request _meta the client
// writes itself.
const tasksVersion = "2025-11-25"

// serveTasks serves h's tools with tasks on, behind bearer tokens.
func serveTasks(t *testing.T, h *harness.Harness) string {
	t.Helper()
	s := server.NewMCPServer("payments", "v1", server.WithTaskCapabilities(true, true, true))
	opts := &mcpgo.Options{Identity: mcpgo.BearerIdentity(verify), Tasks: true}
	if err := mcpgo.AddTools(s, h, opts); err != nil {
		t.Fatal(err)
	}
	hs, err := mcpgo.HTTPServer(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(hs)
	t.Cleanup(srv.Close)
	return srv.URL
}

// startTask sends req as a task-augmented tools/call and returns the
// task's id. mcp-go's client reads every tools/call answer as a
// CallToolResult, so the request goes through its transport.
func startTask(t *testing.T, c *client.Client, req mcp.CallToolRequest) string {
	t.Helper()
	req.Params.Task = &mcp.TaskParams{}
	resp, err := c.GetTransport().SendRequest(context.Background(), transport.JSONRPCRequest{
		JSONRPC: "2.0", ID: mcp.NewRequestId(int64(1 << 30)), Method: "tools/call", Params: req.Params,
		Header: http.Header{"Authorization": {"Bearer tok-alice"}}})
	if err != nil {
		t.Fatalf("tools/call as a task: %v", err)
	}
	if resp.Error != nil {
		t.Fatalf("tools/call as a task: %+v", resp.Error)
	}
	var created mcp.CreateTaskResult
	if err := json.Unmarshal(resp.Result, &created); err != nil || created.Task.TaskId == "" {
		t.Fatalf("tools/call as a task answered %s (%v); want a task", resp.Result, err)
	}
	return created.Task.TaskId
}

// finish waits for the task and returns its result's text and _meta source.
func finish(t *testing.T, c *client.Client, id string) (string, string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done, err := c.WaitForTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}}, 20*time.Millisecond)
	if err != nil {
		t.Fatalf("WaitForTask: %v", err)
	}
	if done.Status != mcp.TaskStatusCompleted {
		t.Fatalf("task status = %s (%s); want completed", done.Status, done.StatusMessage)
	}
	res, err := c.TaskResult(context.Background(), mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	var src string
	if res.Meta != nil {
		src, _ = res.Meta.AdditionalFields["io.github.agentonce/source"].(string)
	}
	return b.String(), src, res.IsError
}

// A long charge made as a task: the host gets the task at once, polls it
// while the charge runs, and reads the charge from tasks/result; the same
// call again is answered from the journal.
func TestTaskLongCall(t *testing.T) {
	p := newPayments(t, true)
	h, err := agentonce.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.Register(chargeTool(p)); err != nil {
		t.Fatal(err)
	}
	c := connectAt(t, serveTasks(t, h), "tok-alice", tasksVersion)
	id := startTask(t, c, charge(900))
	wait(t, p.started, "the charge to start")
	got, err := c.GetTask(context.Background(), mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}})
	if err != nil || got.Status != mcp.TaskStatusWorking {
		t.Fatalf("GetTask while charging = %v, %v; want working", got, err)
	}
	p.release()
	text, src, isErr := finish(t, c, id)
	if isErr || src != "executed" || !strings.Contains(text, `"ch_1"`) {
		t.Errorf("task result: IsError %v, source %q, text %q; want the executed charge", isErr, src, text)
	}
	res, err := c.CallTool(context.Background(), charge(900))
	if err != nil {
		t.Fatal(err)
	}
	if source(res) != "replayed" || p.charges.Load() != 1 {
		t.Errorf("same call again: source %q, charges %d; want replayed, 1", source(res), p.charges.Load())
	}
}

// An intent another process is running (a second Harness on the same
// journal holds it): the harness answers that it is under way, so the task
// stays working and asks again until the other process has finished, then
// completes with its charge. Without tasks the host would read "in
// progress" and have to call again itself.
func TestTaskUnderWay(t *testing.T) {
	p := newPayments(t, true)
	store := memory.New(nil)
	other := harness.New(store, nil)
	defer other.Close()
	served := harness.New(store, &harness.Options{Retry: &retryclass.Policy{InFlightBudget: 20 * time.Millisecond}})
	defer served.Close()
	for _, h := range []*harness.Harness{other, served} {
		if err := h.Register(chargeTool(p)); err != nil {
			t.Fatal(err)
		}
	}
	// The served harness scopes alice's session "s" as "alice"/s.
	call := harness.ToolCall{Tenant: "acme", Session: `"alice"/s`, Turn: "1", Tool: "charge_card", Input: json.RawMessage(`{"amount":5}`)}
	first := make(chan harness.Result, 1)
	go func() { first <- other.Call(context.Background(), call) }()
	wait(t, p.started, "the other process's charge to start")

	c := connectAt(t, serveTasks(t, served), "tok-alice", tasksVersion)
	req := charge(5)
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"io.github.agentonce/session": "s", "io.github.agentonce/turn": "1"}}
	id := startTask(t, c, req)
	// What a call without a task reads meanwhile: in progress elsewhere.
	// The task, started before, meets the same answer and asks again.
	if res := served.Call(context.Background(), call); res.Status != harness.Suppressed {
		t.Fatalf("probe of the held intent: %v; want suppressed (in progress elsewhere)", res.Status)
	}
	p.release()
	if r := <-first; !r.OK() {
		t.Fatalf("other process: %v %v", r.Status, r.Err)
	}
	text, src, isErr := finish(t, c, id)
	if isErr || src != "replayed" || !strings.Contains(text, `"ch_1"`) {
		t.Errorf("task result: IsError %v, source %q, text %q; want the other process's charge, replayed", isErr, src, text)
	}
	if n := p.charges.Load(); n != 1 {
		t.Errorf("charges = %d; want 1", n)
	}
}
