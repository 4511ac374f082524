package genkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/firebase/genkit/go/ai"

	agentgenkit "github.com/agentonce/agentonce/adapters/genkit"
	"github.com/agentonce/agentonce/harness"
)

// The child process's environment: which part it plays, its directory
// (journal, saved generation) and the shop's address.
const (
	childEnv = "AGENTONCE_GENKIT_CHILD"
	dirEnv   = "AGENTONCE_GENKIT_DIR"
	shopEnv  = "AGENTONCE_GENKIT_SHOP"
)

// TestMain runs the child's part when the test binary is re-executed as a
// child: it charges, and dies by SIGKILL when the model reads the charge.
func TestMain(m *testing.M) {
	if part := os.Getenv(childEnv); part != "" {
		child(part)
		os.Exit(3)
	}
	os.Exit(m.Run())
}

func child(part string) {
	dir, url := os.Getenv(dirEnv), os.Getenv(shopEnv)
	t := &testing.T{} // the helpers' Fatal is not called on the child's path
	m := &scriptedModel{reply: func(n int, req *ai.ModelRequest) *ai.Message {
		if readTool(req) {
			syscall.Kill(os.Getpid(), syscall.SIGKILL) // the model read the charge: crash
		}
		return chargeRequest("call_child")
	}}
	h := openHarness(t, filepath.Join(dir, "agent.journal"))
	ctx := harness.WithScope(context.Background(), "conv-1", "1")
	var err error
	switch part {
	case "restart":
		_, err = newAgent(t, m, h, url, nil, false).generate(ctx, ai.WithMessages(userTurn...))
	case "approve":
		history, restart := loadInterrupted(dir)
		_, err = newAgent(t, m, h, url, nil, true).generate(ctx, ai.WithMessages(history...), ai.WithToolRestarts(restart))
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
// asks for the charge again under a new ref. The new Harness on the same
// journal answers it: one charge, and the model reads the first one.
func TestRestartMidRun(t *testing.T) {
	s := newShop(t)
	dir := t.TempDir()
	runChild(t, "restart", dir, s.URL)
	if n := s.Downstream.TotalEffects(); n != 1 {
		t.Fatalf("charges after the crash = %d; want 1", n)
	}

	m := &scriptedModel{reply: func(n int, req *ai.ModelRequest) *ai.Message {
		if !readTool(req) {
			return chargeRequest("call_again")
		}
		return ai.NewModelTextMessage("Charged $49.")
	}}
	ag := newAgent(t, m, openHarness(t, filepath.Join(dir, "agent.journal")), s.URL, nil, false)
	if _, err := ag.generate(agentgenkit.WithSession(context.Background(), "conv-1", userTurn), ai.WithMessages(userTurn...)); err != nil {
		t.Fatal(err)
	}
	if n := s.Downstream.TotalEffects(); n != 1 {
		t.Errorf("charges = %d; want 1", n)
	}
	if got := m.toolOutputs(t, 2); got["call_again"] != ch1 {
		t.Errorf("after the restart the model read %v; want the dead process's charge ch_1", got)
	}
}

// genkit's own interrupt and restart: the tool asks for approval
// (ToolContext.Interrupt) and the generation stops; the application
// restarts the tool request approved (ToolDef.RestartWith), the tool
// charges, and the process dies by SIGKILL while the model reads it. The
// application runs the same restart again: the harness answers it from
// the journal. One charge, and the model reads it. Asked again without
// approval in the same turn, the tool interrupts again, as recorded.
func TestInterruptRestartAfterCrash(t *testing.T) {
	s := newShop(t)
	dir := t.TempDir()
	ctx := harness.WithScope(context.Background(), "conv-1", "1")
	m := &scriptedModel{reply: func(n int, req *ai.ModelRequest) *ai.Message {
		if readTool(req) {
			return ai.NewModelTextMessage("Charged $49.")
		}
		return chargeRequest("call_1")
	}}

	h := openHarness(t, filepath.Join(dir, "agent.journal"))
	ag := newAgent(t, m, h, s.URL, nil, true)
	resp, err := ag.generate(ctx, ai.WithMessages(userTurn...))
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != ai.FinishReasonInterrupted || len(resp.Interrupts()) != 1 {
		t.Fatalf("first generation finished %q with %d interrupts; want 1 interrupt", resp.FinishReason, len(resp.Interrupts()))
	}
	restart, err := ag.tool.RestartWith(resp.Interrupts()[0], ai.WithResumedMetadata[chargeInput](map[string]any{"approved": true}))
	if err != nil {
		t.Fatal(err)
	}
	saveInterrupted(t, dir, resp.History(), restart)
	h.Close() // the child takes the journal

	runChild(t, "approve", dir, s.URL)
	if n := s.Downstream.TotalEffects(); n != 1 {
		t.Fatalf("charges after the crash = %d; want 1", n)
	}

	ag = newAgent(t, m, openHarness(t, filepath.Join(dir, "agent.journal")), s.URL, nil, true)
	history, restart := loadInterrupted(dir)
	resp, err = ag.generate(ctx, ai.WithMessages(history...), ai.WithToolRestarts(restart))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "Charged $49." {
		t.Errorf("answer = %q (finish %q); want %q", resp.Text(), resp.FinishReason, "Charged $49.")
	}
	if n := s.Downstream.TotalEffects(); n != 1 {
		t.Errorf("charges = %d; want 1", n)
	}
	if got := m.toolOutputs(t, 2); got["call_1"] != ch1 {
		t.Errorf("after the restart the model read %v; want the dead process's charge ch_1", got)
	}

	// The same request, not approved: the recorded interrupt again.
	resp, err = ag.generate(ctx, ai.WithMessages(userTurn...))
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != ai.FinishReasonInterrupted || s.Downstream.TotalEffects() != 1 {
		t.Errorf("unapproved repeat finished %q with %d charges; want interrupted, 1", resp.FinishReason, s.Downstream.TotalEffects())
	}
}

// interrupted is a stopped generation as the application keeps it.
type interrupted struct {
	History []*ai.Message
	Restart *ai.Part
}

func saveInterrupted(t *testing.T, dir string, history []*ai.Message, restart *ai.Part) {
	b, err := json.Marshal(interrupted{history, restart})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "interrupted.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func loadInterrupted(dir string) ([]*ai.Message, *ai.Part) {
	b, err := os.ReadFile(filepath.Join(dir, "interrupted.json"))
	if err != nil {
		panic(err)
	}
	var v interrupted
	if err := json.Unmarshal(b, &v); err != nil {
		panic(err)
	}
	return v.History, v.Restart
}
