package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/agentonce/agentonce/adapters/eino"
	"github.com/agentonce/agentonce/bench/maxfired/worker"
	"github.com/agentonce/agentonce/harness"
)

func init() {
	runtimes = append(runtimes, runtime{Name: "eino", Plain: einoPlain, Once: einoOnce,
		How: "a compose graph (chat → tools → chat) with a file CheckPointStore and an interrupt before the tools node, so that the state is saved before the charge (eino writes checkpoints only at interrupts); the application resumes the interrupt at once, and after a crash Invokes again with the same checkpoint id"})
}

func einoPlain(ctx context.Context, j job) (outcome, error) {
	answer, err := einoRun(ctx, j, nil)
	return outcome{Status: "charged", Detail: answer}, err
}

func einoOnce(ctx context.Context, j job) (outcome, error) {
	h, err := worker.OpenHarness(ctx, j)
	if err != nil {
		return outcome{}, err
	}
	defer h.Close()
	t := worker.ChargeTool(j)
	a := eino.New(h, &eino.Options{Tools: map[string]harness.Tool{"charge": t}})
	mw := a.Middleware()
	answer, err := einoRun(harness.WithScope(ctx, j.Intent, "1"), j, &mw)
	return worker.OnceOutcome(answer), err
}

// einoRun runs the graph to its end, from its checkpoint if it has one,
// and returns the charge tool's answer as the model read it.
func einoRun(ctx context.Context, j job, mw *compose.ToolMiddleware) (string, error) {
	m := &einoModel{intent: j.Intent}
	charge, err := utils.InferTool("charge", "Charges the customer.", func(ctx context.Context, in worker.ChargeInput) (json.RawMessage, error) {
		return worker.DoCharge(ctx, j.Pay, in)
	})
	if err != nil {
		return "", err
	}
	cfg := &compose.ToolsNodeConfig{Tools: []tool.BaseTool{charge}}
	if mw != nil {
		cfg.ToolCallMiddlewares = []compose.ToolMiddleware{*mw}
	}
	tools, err := compose.NewToolNode(ctx, cfg)
	if err != nil {
		return "", err
	}
	store := einoCheckpoints(j.Dir)
	r, err := einoGraph(ctx, m, tools, store)
	if err != nil {
		return "", err
	}
	var in []*schema.Message
	if _, ok, err := store.Get(ctx, j.Intent); err != nil {
		return "", err
	} else if !ok {
		in = []*schema.Message{schema.UserMessage("Charge me $49.")}
	}
	_, err = r.Invoke(ctx, in, compose.WithCheckPointID(j.Intent))
	if _, ok := compose.ExtractInterruptInfo(err); ok {
		// The pause before the tools node, its checkpoint written: the
		// application resumes it at once.
		_, err = r.Invoke(ctx, nil, compose.WithCheckPointID(j.Intent))
	}
	return m.answer(), err
}

// einoState is the graph's state: the conversation so far.
type einoState struct{ Messages []*schema.Message }

func init() { schema.RegisterName[*einoState]("maxfired_eino_state") }

func einoGraph(ctx context.Context, m model.ToolCallingChatModel, tools *compose.ToolsNode, store compose.CheckPointStore) (compose.Runnable[[]*schema.Message, *schema.Message], error) {
	g := compose.NewGraph[[]*schema.Message, *schema.Message](compose.WithGenLocalState(func(context.Context) *einoState { return &einoState{} }))
	err := errors.Join(
		g.AddChatModelNode("chat", m,
			compose.WithStatePreHandler(func(_ context.Context, in []*schema.Message, s *einoState) ([]*schema.Message, error) {
				s.Messages = append(s.Messages, in...)
				return s.Messages, nil
			}),
			compose.WithStatePostHandler(func(_ context.Context, out *schema.Message, s *einoState) (*schema.Message, error) {
				s.Messages = append(s.Messages, out)
				return out, nil
			})),
		g.AddToolsNode("tools", tools),
		g.AddEdge(compose.START, "chat"),
		g.AddBranch("chat", compose.NewGraphBranch(func(_ context.Context, out *schema.Message) (string, error) {
			if len(out.ToolCalls) > 0 {
				return "tools", nil
			}
			return compose.END, nil
		}, map[string]bool{"tools": true, compose.END: true})),
		g.AddEdge("tools", "chat"))
	if err != nil {
		return nil, err
	}
	return g.Compile(ctx, compose.WithCheckPointStore(store), compose.WithNodeTriggerMode(compose.AnyPredecessor),
		compose.WithInterruptBeforeNodes([]string{"tools"}))
}

// einoModel asks for the charge once, then ends the turn, keeping the
// tool's answer it read.
type einoModel struct {
	intent string
	mu     sync.Mutex
	read   string
}

func (m *einoModel) Generate(_ context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	if last := input[len(input)-1]; last.Role == schema.Tool {
		m.mu.Lock()
		m.read = last.Content
		m.mu.Unlock()
		return schema.AssistantMessage("Done.", nil), nil
	}
	return schema.AssistantMessage("", []schema.ToolCall{{ID: "call_1", Type: "function",
		Function: schema.FunctionCall{Name: "charge", Arguments: worker.ChargeArgs(m.intent)}}}), nil
}

func (m *einoModel) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

func (m *einoModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }

func (m *einoModel) answer() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.read
}

// einoCheckpoints is a compose.CheckPointStore of files, written durably
// (write, fsync, rename): each write is a crash point.
type einoCheckpoints string

func (d einoCheckpoints) path(id string) string {
	return filepath.Join(string(d), "checkpoint-"+strings.ReplaceAll(id, string(filepath.Separator), "_"))
}

func (d einoCheckpoints) Get(_ context.Context, id string) ([]byte, bool, error) {
	b, err := os.ReadFile(d.path(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	return b, err == nil, err
}

func (d einoCheckpoints) Set(_ context.Context, id string, b []byte) error {
	if err := writeDurably(d.path(id), b); err != nil {
		return err
	}
	worker.Point("eino checkpoint")
	return nil
}

// writeDurably writes path by a synced temporary file renamed over it.
func writeDurably(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err = errors.Join(err, f.Sync(), f.Close()); err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
