package main

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentonce/agentonce/journal/bolt"
)

// TestHelperHoldJournal is not a test: re-executed with
// AGENTCTL_HOLD_JOURNAL set, it plays an agent that has the journal open
// for writing, says "ready", and waits to be killed.
func TestHelperHoldJournal(t *testing.T) {
	path := os.Getenv("AGENTCTL_HOLD_JOURNAL")
	if path == "" {
		t.Skip("helper process for TestJournalHeldByAnotherProcess")
	}
	s, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	os.Stdout.WriteString("ready\n")
	select {} // until SIGKILL
}

// TestJournalHeldByAnotherProcess: while another process has the journal
// open, commands fail fast with "in use" (exit 4) and change nothing; once
// that process is killed, the journal is readable again.
func TestJournalHeldByAnotherProcess(t *testing.T) {
	fx := buildFixture(t)
	agent := exec.Command(os.Args[0], "-test.run=^TestHelperHoldJournal$")
	agent.Env = append(os.Environ(), "AGENTCTL_HOLD_JOURNAL="+fx.path)
	out, err := agent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	defer agent.Process.Kill()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("helper said %q", line)
	}
	hash := fileHash(t, fx.path) // after the helper's open, which may write

	for _, c := range [][]string{{"ls"}, {"stats"}, {"gc"}, {"resolve", fx.keys[fxEmail].String(), "--succeeded"}} {
		r := agentctl(t, false, append(c, "--journal", fx.path, "--lock-timeout", "100ms")...)
		if r.code != exitInUse || !strings.Contains(r.stderr, "in use by another process") || !strings.Contains(r.stderr, "stop the process") {
			t.Errorf("%v while held = %d, %q; want %d", c, r.code, r.stderr, exitInUse)
		}
	}
	if fileHash(t, fx.path) != hash {
		t.Errorf("the refused commands changed the journal")
	}

	if err := agent.Process.Kill(); err != nil { // SIGKILL: the lock dies with the process
		t.Fatal(err)
	}
	agent.Wait()
	r := agentctl(t, false, "ls", "--journal", fx.path)
	if r.code != 0 || strings.Count(r.stdout, "\n") != fixtureSize {
		t.Errorf("ls after the holder was killed = %d, %q", r.code, r.stderr)
	}
}
