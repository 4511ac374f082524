package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/inspect"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// The live agent: a re-executed test binary (AGENTCTL_LIVE_AGENT=journal)
// with a Harness on the bbolt journal, making calls in a loop while the
// test runs agentctl against it. It takes commands on stdin and answers
// each with one line on stdout.
//
//	(start)  charge s1/1 (keyed, succeeds), email s1/1 (unkeyed, ends
//	         unknown), then "ready KEY" with email's key; the loop starts:
//	         charge in session "loop", turn after turn, every third one
//	         retried once (not executed)
//	pause    stop the loop, "paused"
//	reissue  call email s1/1 again, a JSON line: status, source, output
//	         and how often email's tool ran
//	slow     start a call whose tool blocks, "slow KEY" once it runs
//	release  let it return, "released STATUS"
//	close    h.Close(), "closed", exit 0
func TestHelperLiveAgent(t *testing.T) {
	path := os.Getenv("AGENTCTL_LIVE_AGENT")
	if path == "" {
		t.Skip("helper process for the live agent tests")
	}
	ctx := context.Background()
	h, err := agentonce.Open(ctx, path, &agentonce.OpenOptions{Inspect: agentonce.InspectRequire, Options: harness.Options{Retry: &retryclass.Policy{
		MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond}}})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	var emailRuns, chargeRuns atomic.Int32
	slowRunning, slowRelease := make(chan struct{}), make(chan struct{})
	err = h.Register(
		harness.Tool{Name: "charge", Effect: journal.Keyed, Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			if chargeRuns.Add(1)%3 == 0 {
				return nil, retryclass.MarkNotExecuted(errors.New("503 with Retry-After"))
			}
			return json.RawMessage(`{"charged":true}`), nil
		}},
		harness.Tool{Name: "email", Timeout: 10 * time.Millisecond, Settle: -1, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			emailRuns.Add(1)
			return nil, errors.New("connection reset after the request was sent")
		}},
		harness.Tool{Name: "slow", Timeout: time.Minute, Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			close(slowRunning)
			<-slowRelease
			return json.RawMessage(`{"slow":true}`), nil
		}},
	)
	if err != nil {
		fmt.Println("register:", err)
		os.Exit(1)
	}
	call := func(session, turn, tool, input string) harness.Result {
		return h.Call(ctx, harness.ToolCall{Tenant: "acme", Session: session, Turn: turn, Tool: tool, Input: json.RawMessage(input)})
	}
	call("s1", "1", "charge", `{"amount":4900}`)
	email := func() harness.Result { return call("s1", "1", "email", `{"to":"a@example.com"}`) }
	first := email()
	fmt.Println("ready", first.Key)

	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			call("loop", fmt.Sprint(i), "charge", `{"amount":100}`)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	var slowDone chan harness.Result
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "pause":
			close(stop)
			<-stopped
			fmt.Println("paused")
		case "reissue":
			r := email()
			b, _ := json.Marshal(map[string]any{"status": r.Status.String(), "source": r.Source.String(),
				"output": string(r.Output), "runs": emailRuns.Load()})
			fmt.Println(string(b))
		case "slow":
			slowDone = make(chan harness.Result, 1)
			go func() { slowDone <- call("slow", "1", "slow", `{}`) }()
			<-slowRunning
			for rec, err := range h.Store().List(ctx, journal.Filter{Session: "slow"}) {
				if err == nil {
					fmt.Println("slow", rec.Key)
				}
				break
			}
		case "release":
			close(slowRelease)
			fmt.Println("released", (<-slowDone).Status)
		case "close":
			if err := h.Close(); err != nil {
				fmt.Println("close:", err)
				os.Exit(1)
			}
			fmt.Println("closed")
			os.Exit(0)
		}
	}
	select {} // stdin closed: wait for SIGKILL
}

// liveAgent is a running helper agent.
type liveAgent struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	email string // the key of the unknown intent
}

func startAgent(t *testing.T, path string, prepare func(*exec.Cmd)) *liveAgent {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLiveAgent$")
	cmd.Env = append(os.Environ(), "AGENTCTL_LIVE_AGENT="+path)
	cmd.Stderr = os.Stderr
	if prepare != nil {
		prepare(cmd)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &liveAgent{t: t, cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := a.line()
	if !strings.HasPrefix(line, "ready ") {
		t.Fatalf("agent said %q; want ready KEY", line)
	}
	a.email = strings.TrimPrefix(line, "ready ")
	return a
}

func (a *liveAgent) line() string {
	a.t.Helper()
	l, err := a.out.ReadString('\n')
	if err != nil {
		a.t.Fatalf("agent's answer: %v", err)
	}
	return strings.TrimSuffix(l, "\n")
}

// do sends a command and returns the agent's answer.
func (a *liveAgent) do(cmd string) string {
	a.t.Helper()
	fmt.Fprintln(a.in, cmd)
	return a.line()
}

// kill ends the agent with SIGKILL, leaving its socket behind.
func (a *liveAgent) kill() {
	a.cmd.Process.Kill()
	a.cmd.Wait()
}

// agentctlAt runs one invocation in-process on a clock that reads at:
// the live agent's records are made on the real clock.
func agentctlAt(t *testing.T, at time.Time, args ...string) result {
	t.Helper()
	e, out, errb := testEnv(false)
	e.now = func() time.Time { return at }
	code := run(context.Background(), e, args)
	return result{code, out.String(), errb.String()}
}

// liveCtl runs agentctl against a running agent, now.
func liveCtl(t *testing.T, args ...string) result {
	t.Helper()
	return agentctlAt(t, time.Now(), args...)
}

// syncBuffer is a bytes.Buffer for a command that writes while the test
// reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startTail runs "agentctl tail ARGS" in-process until its context is
// cancelled or the agent goes; the returned channel gives its exit code.
func startTail(t *testing.T, ctx context.Context, tty bool, args ...string) (*syncBuffer, *syncBuffer, chan int) {
	t.Helper()
	e, _, _ := testEnv(tty)
	e.now = time.Now
	var out, errb syncBuffer
	e.stdout, e.stderr = &out, &errb
	code := make(chan int, 1)
	go func() { code <- run(ctx, e, append([]string{"tail"}, args...)) }()
	return &out, &errb, code
}

// waitFor polls cond until it holds; the test's own timeout bounds it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if t.Context().Err() != nil {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLiveAgent: against a running agent, the reads work through its
// socket and print what they print for the stopped agent's file; tail
// streams its calls; resolve settles an unknown intent and the agent's
// next call of it is answered with the resolution, without a re-run.
func TestLiveAgent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	a := startAgent(t, path, nil)
	j := []string{"--journal", path}

	// Reads see the live journal: the loop's session grows between two.
	count := func() int {
		r := liveCtl(t, append([]string{"ls", "--session", "loop", "--limit", "0"}, j...)...)
		if r.code != 0 {
			t.Fatalf("ls of a running agent = %d, %q", r.code, r.stderr)
		}
		return strings.Count(r.stdout, "\n")
	}
	n1 := count()
	waitFor(t, "the loop to record more calls", func() bool { return count() > n1 })

	// tail, both forms, while the loop runs.
	ctx, cancel := context.WithCancel(context.Background())
	jsonOut, _, jsonCode := startTail(t, ctx, false, append([]string{"--json", "--session", "loop"}, j...)...)
	humanOut, _, humanCode := startTail(t, ctx, true, j...)
	waitFor(t, "tail to show results and retries", func() bool {
		s := jsonOut.String()
		return strings.Count(s, `"kind":"result"`) >= 3 && strings.Contains(s, `"kind":"retry"`) &&
			strings.Contains(humanOut.String(), "succeeded (executed)")
	})
	cancel()
	if c := <-jsonCode; c != 0 {
		t.Errorf("tail --json interrupted: exit %d; want 0", c)
	}
	if c := <-humanCode; c != 0 {
		t.Errorf("tail interrupted: exit %d; want 0", c)
	}
	sawKinds := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(jsonOut.String()), "\n") {
		var ev inspect.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("tail --json line %q: %v", l, err)
		}
		if ev.Session != "loop" || ev.Tool != "charge" || ev.Key == "" || ev.Time.IsZero() {
			t.Errorf("tail --json --session loop printed %+v", ev)
		}
		sawKinds[ev.Kind] = true
	}
	for _, k := range []string{"before-write-ahead", "after-write-ahead", "after-effect", "retry", "after-outcome", "result"} {
		if !sawKinds[k] {
			t.Errorf("tail --json saw no %q event (saw %v)", k, sawKinds)
		}
	}

	// The unknown intent: a re-issue is not re-run; resolve settles it.
	var re struct {
		Status, Source, Output string
		Runs                   int
	}
	json.Unmarshal([]byte(a.do("reissue")), &re)
	if re.Status != "unknown" || re.Runs != 1 {
		t.Fatalf("re-issue before resolve = %+v; want unknown, the tool run once", re)
	}
	r := liveCtl(t, append([]string{"replay", "--session", "s1"}, j...)...)
	if r.code != exitReplayBlock || !strings.Contains(r.stdout, "block\t"+a.email) {
		t.Errorf("replay of the running agent = %d, %q; want %d with %s blocked", r.code, r.stdout, exitReplayBlock, a.email)
	}
	r = liveCtl(t, append([]string{"resolve", a.email, "--succeeded", "--output", `{"id":"m-1"}`, "--reason", "seen in the mail log"}, j...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "resolved "+a.email+" as succeeded") {
		t.Fatalf("resolve through the running agent = %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	json.Unmarshal([]byte(a.do("reissue")), &re)
	if re.Status != "succeeded" || re.Source != "replayed" || re.Output != `{"id":"m-1"}` || re.Runs != 1 {
		t.Errorf("re-issue after resolve = %+v; want succeeded, replayed, {\"id\":\"m-1\"}, the tool run once", re)
	}

	// An intent in flight in the agent: its lease is a live owner's, so
	// resolve refuses it and replay says it waits.
	slow := strings.TrimPrefix(a.do("slow"), "slow ")
	r = liveCtl(t, append([]string{"resolve", slow, "--failed", "--reason", "x"}, j...)...)
	if r.code != exitConflict || !strings.Contains(r.stderr, "in flight") {
		t.Errorf("resolve of an intent in flight in the agent = %d, %q; want %d", r.code, r.stderr, exitConflict)
	}
	r = liveCtl(t, append([]string{"replay", "--session", "slow"}, j...)...)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "wait\t"+slow) {
		t.Errorf("replay of an intent in flight in the agent = %d, %q; want wait", r.code, r.stdout)
	}
	if got := a.do("release"); got != "released succeeded" {
		t.Errorf("the slow call after the refused resolve: %q; want released succeeded", got)
	}

	// Writes the agent keeps for itself: "in use", as before.
	r = liveCtl(t, append([]string{"gc"}, j...)...)
	if r.code != exitInUse || !strings.Contains(r.stderr, "serves reads and resolve") ||
		!strings.Contains(r.stderr, "a live agent holds the journal") || strings.Contains(r.stderr, "retry with a longer --lock-timeout") {
		t.Errorf("gc of a running agent = %d, %q; want %d, the live agent named and no --lock-timeout advice", r.code, r.stderr, exitInUse)
	}

	// Same output from the running agent and from its file once stopped.
	if got := a.do("pause"); got != "paused" {
		t.Fatalf("pause: %q", got)
	}
	reads := [][]string{
		{"ls", "--limit", "0"}, {"ls", "--session", "s1", "--json"}, {"show", a.email}, {"show", slow, "--json"},
		{"stats"}, {"stats", "--json"}, {"replay", "--session", "s1"}, {"replay", "--session", "s1", "--json"},
		{"export"}, {"gc", "--dry-run"},
	}
	at := time.Now()
	var live []result
	for _, c := range reads {
		live = append(live, agentctlAt(t, at, append(c, j...)...))
	}
	if got := a.do("close"); got != "closed" {
		t.Fatalf("close: %q", got)
	}
	a.cmd.Wait()
	if _, err := os.Lstat(path + ".sock"); !os.IsNotExist(err) {
		t.Errorf("socket after the agent closed: %v; want it removed", err)
	}
	for i, c := range reads {
		stopped := agentctlAt(t, at, append(c, j...)...)
		l, s := live[i], stopped
		if c[0] == "stats" { // the file's size changes when the agent writes its indexes at close
			l.stdout, s.stdout = dropSize(l.stdout), dropSize(s.stdout)
		}
		if l != s {
			t.Errorf("%v: running agent = %d %q %q\nstopped = %d %q %q", c, l.code, l.stdout, l.stderr, s.code, s.stdout, s.stderr)
		}
	}
}

// dropSize removes the file size from stats output.
func dropSize(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "size_bytes\t") {
			if i := strings.Index(l, `"size_bytes":`); i >= 0 {
				end := strings.Index(l[i:], ",")
				l = l[:i] + l[i+end+1:]
			}
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestLiveAgentDies: tail of an agent killed mid-stream ends with exit 8
// and says so; the stale socket does not stop agentctl from reading the
// file, and the next agent replaces it.
func TestLiveAgentDies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	j := []string{"--journal", path}
	a := startAgent(t, path, nil)
	out, errb, code := startTail(t, context.Background(), false, j...)
	waitFor(t, "tail to show events", func() bool { return strings.Contains(out.String(), "\tresult\t") })
	a.kill()
	if c := <-code; c != exitAgentGone || !strings.Contains(errb.String(), "went away") {
		t.Errorf("tail of a killed agent = %d, %q; want %d, went away", c, errb.String(), exitAgentGone)
	}
	if _, err := os.Lstat(path + ".sock"); err != nil {
		t.Fatalf("a killed agent leaves its socket: %v", err)
	}
	r := liveCtl(t, append([]string{"ls", "--session", "s1"}, j...)...)
	if r.code != 0 || strings.Count(r.stdout, "\n") != 2 {
		t.Errorf("ls beside a stale socket = %d, %q, %q; want the file's 2 intents", r.code, r.stdout, r.stderr)
	}
	r = liveCtl(t, append([]string{"tail"}, j...)...)
	if r.code != exitAgentGone || !strings.Contains(r.stderr, "no running agent") {
		t.Errorf("tail with no agent = %d, %q; want %d", r.code, r.stderr, exitAgentGone)
	}
	b := startAgent(t, path, nil) // InspectRequire: fails unless the stale socket is replaced
	r = liveCtl(t, append([]string{"show", b.email}, j...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "state\tunknown") {
		t.Errorf("show through the restarted agent = %d, %q, %q", r.code, r.stdout, r.stderr)
	}
}

// TestLiveAgentOtherUser: an agent of another user (uid 65534) is
// refused by agentctl, with exit 4 and a message that names the user;
// the agent refuses this user too. Needs root to run the agent as another
// user.
func TestLiveAgentOtherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run the agent as another user")
	}
	const other = 65534
	dir := t.TempDir()
	// Let the other user reach its directory: t.TempDir makes two levels,
	// both private.
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	if err := os.Chown(dir, other, other); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "agent.test")
	copyFile(t, os.Args[0], bin)
	path := filepath.Join(dir, "j.db")
	startAgent(t, path, func(c *exec.Cmd) {
		c.Path, c.Args[0] = bin, bin
		c.Dir = dir
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: other, Gid: other}}
	})
	r := agentctl(t, false, "ls", "--journal", path)
	if r.code != exitInUse || !strings.Contains(r.stderr, "another user") || !strings.Contains(r.stderr, fmt.Sprint("uid ", other)) {
		t.Errorf("ls of another user's agent = %d, %q; want %d naming uid %d", r.code, r.stderr, exitInUse, other)
	}
	r = agentctl(t, false, "tail", "--journal", path)
	if r.code != exitInUse {
		t.Errorf("tail of another user's agent = %d, %q; want %d", r.code, r.stderr, exitInUse)
	}
	// The agent's own check, seen without the client's.
	c, err := net.Dial("unix", path+".sock")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	line, _ := bufio.NewReader(c).ReadString('\n')
	if !strings.Contains(line, `"code":"refused"`) || !strings.Contains(line, "uid 0") {
		t.Errorf("the agent answered a client of another user %q; want refused", line)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestLiveAgentVersionMismatch: an agent that speaks another version of
// the protocol (as a newer agentonce would) is refused with exit 5 and a
// message naming both versions.
func TestLiveAgentVersionMismatch(t *testing.T) {
	fx := buildFixture(t)
	ln, err := net.Listen("unix", fx.path+".sock")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			bufio.NewReader(c).ReadString('\n')
			fmt.Fprintf(c, `{"protocol":"agentonce-inspect","version":%d,"namespace":"%s"}`+"\n", inspect.Version+1, testNS)
			c.Close()
		}
	}()
	for _, cmd := range [][]string{{"ls"}, {"tail"}} {
		r := agentctl(t, false, append(cmd, "--journal", fx.path)...)
		if r.code != exitCorrupt || !strings.Contains(r.stderr, fmt.Sprint("version ", inspect.Version+1)) {
			t.Errorf("%v against an agent of protocol version %d = %d, %q; want %d", cmd, inspect.Version+1, r.code, r.stderr, exitCorrupt)
		}
	}
}
