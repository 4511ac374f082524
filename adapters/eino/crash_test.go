package eino_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/agentonce/agentonce/adapters/eino"
	"github.com/agentonce/agentonce/harness"
)

// The child process's environment: which part it plays, its journal and
// checkpoint directory, and the shop's address.
const (
	childEnv = "AGENTONCE_EINO_CHILD"
	dirEnv   = "AGENTONCE_EINO_DIR"
	shopEnv  = "AGENTONCE_EINO_SHOP"
)

// TestMain runs the child's part when the test binary is re-executed as a
// child: it charges, and dies by SIGKILL when the model reads the charge,
// before the run can end or save anything.
func TestMain(m *testing.M) {
	if part := os.Getenv(childEnv); part != "" {
		child(part)
		os.Exit(3) // not reached: the child kills itself
	}
	os.Exit(m.Run())
}

func child(part string) {
	dir, url := os.Getenv(dirEnv), os.Getenv(shopEnv)
	t := &testing.T{} // the helpers' Fatal is not called on the child's path
	m := &scriptedModel{reply: func(n int, input []*schema.Message) *schema.Message {
		if input[len(input)-1].Role == schema.Tool {
			syscall.Kill(os.Getpid(), syscall.SIGKILL) // the model read the charge: crash
		}
		return toolCalls(callCharge("call_child", `{"amount":4900,"currency":"usd"}`))
	}}
	h := openHarness(t, filepath.Join(dir, "agent.journal"))
	a := eino.New(h, keyed)
	ctx := harness.WithScope(context.Background(), "conv-1", "1")
	var err error
	switch part {
	case "restart":
		msgs := []*schema.Message{schema.UserMessage("Charge me $49.")}
		_, err = newAgent(t, m, a, chargeTool(t, url, nil)).Generate(ctx, msgs)
	case "resume":
		_, err = newGraph(t, dir, m, a, chargeTool(t, url, nil), true).Invoke(ctx, nil, compose.WithCheckPointID("conv-1"))
	case "approve":
		id, _ := os.ReadFile(filepath.Join(dir, "interrupt-id"))
		_, err = newGraph(t, dir, m, a, approvalTool(t, url), false).Invoke(compose.ResumeWithData(ctx, string(id), true), nil, compose.WithCheckPointID("conv-1"))
	}
	os.Stderr.WriteString("child ended without crashing: " + errString(err) + "\n")
	os.Exit(4)
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// runChild runs part in a child process on dir's journal and waits for
// its SIGKILL.
func runChild(t *testing.T, part, dir, url string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+part, dirEnv+"="+dir, shopEnv+"="+url)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child %s: %v; want killed by SIGKILL\n%s", part, err, out)
	}
}

// The process dies by SIGKILL after the charge, while the model reads it;
// the application restarts and runs the user's turn again, and the model
// asks for the charge again under a new call id. The new Harness on the
// same journal answers it from the journal: one charge, and the model
// reads the charge the dead process made.
func TestRestartMidRun(t *testing.T) {
	s := newShop(t)
	dir := t.TempDir()
	runChild(t, "restart", dir, s.URL)
	if n := s.Downstream.TotalEffects(); n != 1 {
		t.Fatalf("charges after the crash = %d; want 1", n)
	}

	m := &scriptedModel{reply: func(n int, _ []*schema.Message) *schema.Message {
		if n == 1 {
			return toolCalls(callCharge("call_again", `{"amount":4900,"currency":"usd"}`))
		}
		return schema.AssistantMessage("Charged $49.", nil)
	}}
	a := eino.New(openHarness(t, filepath.Join(dir, "agent.journal")), keyed)
	msgs := []*schema.Message{schema.UserMessage("Charge me $49.")}
	if _, err := newAgent(t, m, a, chargeTool(t, s.URL, nil)).Generate(eino.WithSession(context.Background(), "conv-1", msgs), msgs); err != nil {
		t.Fatal(err)
	}
	if n := s.Downstream.TotalEffects(); n != 1 {
		t.Errorf("charges = %d; want 1", n)
	}
	if got := toolResults(m.input(t, 2)); len(got) != 1 || got[0].Content != `{"id":"ch_1","amount":4900}` {
		t.Errorf("after the restart the model read %v; want the dead process's charge ch_1", contents(got))
	}
}

// eino's own resume path: the graph stops before its tools node for the
// user's approval (an interrupt, saved in a checkpoint); resumed, it
// charges, and the process dies by SIGKILL while the model reads the
// charge, so the only checkpoint is still the one before the tools node.
// Resumed again from it, the tools node runs the charge again: the
// harness answers it from the journal. One charge; the model reads it.
func TestCheckpointResumeAfterCrash(t *testing.T) {
	s := newShop(t)
	dir := t.TempDir()
	ctx := harness.WithScope(context.Background(), "conv-1", "1")

	m := &scriptedModel{reply: func(n int, input []*schema.Message) *schema.Message {
		if input[len(input)-1].Role == schema.Tool {
			return schema.AssistantMessage("Charged $49.", nil)
		}
		return toolCalls(callCharge("call_1", `{"amount":4900,"currency":"usd"}`))
	}}
	h := openHarness(t, filepath.Join(dir, "agent.journal"))
	_, err := newGraph(t, dir, m, eino.New(h, keyed), chargeTool(t, s.URL, nil), true).Invoke(ctx, []*schema.Message{schema.UserMessage("Charge me $49.")}, compose.WithCheckPointID("conv-1"))
	if _, ok := compose.ExtractInterruptInfo(err); !ok {
		t.Fatalf("first run: %v; want the interrupt before the tools node", err)
	}
	h.Close() // the child takes the journal

	runChild(t, "resume", dir, s.URL)
	if n := s.Downstream.TotalEffects(); n != 1 {
		t.Fatalf("charges after the crash = %d; want 1", n)
	}

	a := eino.New(openHarness(t, filepath.Join(dir, "agent.journal")), keyed)
	out, err := newGraph(t, dir, m, a, chargeTool(t, s.URL, nil), true).Invoke(ctx, nil, compose.WithCheckPointID("conv-1"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Content != "Charged $49." {
		t.Errorf("answer = %q; want %q", out.Content, "Charged $49.")
	}
	if n := s.Downstream.TotalEffects(); n != 1 {
		t.Errorf("charges = %d; want 1", n)
	}
	if got := toolResults(m.input(t, 2)); len(got) != 1 || got[0].ToolCallID != "call_1" || got[0].Content != `{"id":"ch_1","amount":4900}` {
		t.Errorf("after the resume the model read %v; want the dead process's charge ch_1", contents(got))
	}
}

// The tool itself asks for approval (tool.Interrupt) and the run stops;
// resumed with the approval (compose.ResumeWithData), it charges, and the
// process dies by SIGKILL while the model reads the charge. Resumed again
// from the same checkpoint with the same approval, the harness answers
// from the journal: one charge, and the model reads it. The interrupt
// itself is recorded: the unapproved call, repeated, interrupts again.
func TestToolInterruptResumeAfterCrash(t *testing.T) {
	s := newShop(t)
	dir := t.TempDir()
	ctx := harness.WithScope(context.Background(), "conv-1", "1")
	m := &scriptedModel{reply: func(n int, input []*schema.Message) *schema.Message {
		if input[len(input)-1].Role == schema.Tool {
			return schema.AssistantMessage("Charged $49.", nil)
		}
		return toolCalls(callCharge("call_1", `{"amount":4900,"currency":"usd"}`))
	}}
	h := openHarness(t, filepath.Join(dir, "agent.journal"))
	_, err := newGraph(t, dir, m, eino.New(h, keyed), approvalTool(t, s.URL), false).Invoke(ctx,
		[]*schema.Message{schema.UserMessage("Charge me $49.")}, compose.WithCheckPointID("conv-1"))
	info, ok := compose.ExtractInterruptInfo(err)
	if !ok {
		t.Fatalf("first run: %v; want the tool's interrupt", err)
	}
	var id string
	for _, ic := range info.InterruptContexts {
		if ic.IsRootCause {
			id = ic.ID
			if ic.Info != "Charge $49?" {
				t.Errorf("interrupt info = %v; want the tool's question", ic.Info)
			}
		}
	}
	if id == "" || s.Downstream.TotalEffects() != 0 {
		t.Fatalf("interrupt id %q, charges %d; want the tool's interrupt and no charge", id, s.Downstream.TotalEffects())
	}
	must(t, os.WriteFile(filepath.Join(dir, "interrupt-id"), []byte(id), 0o600))
	h.Close()

	runChild(t, "approve", dir, s.URL)
	if n := s.Downstream.TotalEffects(); n != 1 {
		t.Fatalf("charges after the crash = %d; want 1", n)
	}

	h = openHarness(t, filepath.Join(dir, "agent.journal"))
	out, err := newGraph(t, dir, m, eino.New(h, keyed), approvalTool(t, s.URL), false).Invoke(
		compose.ResumeWithData(ctx, id, true), nil, compose.WithCheckPointID("conv-1"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Content != "Charged $49." || s.Downstream.TotalEffects() != 1 {
		t.Errorf("answer %q with %d charges; want %q with 1", out.Content, s.Downstream.TotalEffects(), "Charged $49.")
	}
	if got := toolResults(m.input(t, 2)); len(got) != 1 || got[0].Content != `{"id":"ch_1","amount":4900}` {
		t.Errorf("after the resume the model read %v; want the dead process's charge ch_1", contents(got))
	}

	// The same call in the same turn, not a resume: the recorded interrupt.
	_, err = newGraph(t, t.TempDir(), m, eino.New(h, keyed), approvalTool(t, s.URL), false).Invoke(ctx,
		[]*schema.Message{schema.UserMessage("Charge me $49.")}, compose.WithCheckPointID("conv-2"))
	if _, ok := compose.ExtractInterruptInfo(err); !ok || s.Downstream.TotalEffects() != 1 {
		t.Errorf("unapproved repeat: %v with %d charges; want the interrupt again and 1 charge", err, s.Downstream.TotalEffects())
	}
}

// approvalTool is the charge tool behind an approval: it interrupts the
// run until it is resumed with true.
func approvalTool(t testing.TB, url string) tool.BaseTool {
	return approving{chargeTool(t, url, nil)}
}

type approving struct{ tool.InvokableTool }

func (a approving) InvokableRun(ctx context.Context, args string, opts ...tool.Option) (string, error) {
	if target, _, approved := tool.GetResumeContext[bool](ctx); !target || !approved {
		return "", tool.Interrupt(ctx, "Charge $49?")
	}
	return a.InvokableTool.InvokableRun(ctx, args, opts...)
}

// convState is the graph's state: the conversation so far.
type convState struct {
	Messages []*schema.Message
}

func init() { schema.RegisterName[*convState]("agentonce_eino_test_state") }

// newGraph is a react-style loop (chat → tools → chat) whose state lives
// in checkpoints under dir; with approveBeforeTools it stops before the
// tools node for approval.
func newGraph(t testing.TB, dir string, m model.ToolCallingChatModel, a *eino.Adapter, charge tool.BaseTool, approveBeforeTools bool) compose.Runnable[[]*schema.Message, *schema.Message] {
	ctx := context.Background()
	tools, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{
		Tools:               []tool.BaseTool{charge},
		ToolCallMiddlewares: []compose.ToolMiddleware{a.Middleware()},
	})
	if err != nil {
		t.Fatal(err)
	}
	g := compose.NewGraph[[]*schema.Message, *schema.Message](compose.WithGenLocalState(func(context.Context) *convState { return &convState{} }))
	appendIn := func(_ context.Context, in []*schema.Message, s *convState) ([]*schema.Message, error) {
		s.Messages = append(s.Messages, in...)
		return s.Messages, nil
	}
	must(t, g.AddChatModelNode("chat", m,
		compose.WithStatePreHandler(appendIn),
		compose.WithStatePostHandler(func(_ context.Context, out *schema.Message, s *convState) (*schema.Message, error) {
			s.Messages = append(s.Messages, out)
			return out, nil
		})))
	must(t, g.AddToolsNode("tools", tools))
	must(t, g.AddEdge(compose.START, "chat"))
	must(t, g.AddBranch("chat", compose.NewGraphBranch(func(_ context.Context, out *schema.Message) (string, error) {
		if len(out.ToolCalls) > 0 {
			return "tools", nil
		}
		return compose.END, nil
	}, map[string]bool{"tools": true, compose.END: true})))
	must(t, g.AddEdge("tools", "chat"))
	opts := []compose.GraphCompileOption{compose.WithCheckPointStore(fileCheckPoints(dir)), compose.WithNodeTriggerMode(compose.AnyPredecessor)}
	if approveBeforeTools {
		opts = append(opts, compose.WithInterruptBeforeNodes([]string{"tools"}))
	}
	r, err := g.Compile(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func must(t testing.TB, err error) {
	if err != nil {
		t.Fatal(err)
	}
}

// fileCheckPoints is a compose.CheckPointStore of files in a directory, so
// that a checkpoint outlives the process that wrote it.
type fileCheckPoints string

func (d fileCheckPoints) path(id string) string {
	return filepath.Join(string(d), "checkpoint-"+strings.ReplaceAll(id, string(filepath.Separator), "_"))
}

func (d fileCheckPoints) Get(_ context.Context, id string) ([]byte, bool, error) {
	b, err := os.ReadFile(d.path(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	return b, err == nil, err
}

func (d fileCheckPoints) Set(_ context.Context, id string, b []byte) error {
	tmp := d.path(id) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, d.path(id))
}
