package powerloss

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// requireFUSEEnv, when set, makes a machine without FUSE fail the tests
// instead of skipping them: CI sets it, so that a missing /dev/fuse cannot
// pass for a green run.
const requireFUSEEnv = "AGENTONCE_REQUIRE_FUSE"

// mount mounts a power-loss file system over a new backing directory for
// the test, or skips the test where FUSE is not available. It is unmounted
// when the test ends.
func mount(t *testing.T) *FS {
	t.Helper()
	backing, dir := t.TempDir(), t.TempDir()
	m, err := Mount(dir, backing)
	if errors.Is(err, ErrUnavailable) && os.Getenv(requireFUSEEnv) == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return m
}

// child is a re-executed test binary that reports to the test on a pipe
// and blocks until it is killed.
type child struct {
	t     *testing.T
	cmd   *exec.Cmd
	lines *bufio.Scanner
	stdin io.WriteCloser
	out   strings.Builder // the child's stdout and stderr, for failures
}

// startChild runs the test binary's test named run with env added.
func startChild(t *testing.T, run string, env ...string) *child {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{t: t, cmd: exec.Command(os.Args[0], "-test.run=^"+run+"$", "-test.count=1")}
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.ExtraFiles = []*os.File{w} // fd 3 in the child
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
	// The child blocks reading stdin, which stays open until it is killed.
	c.stdin, err = c.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	c.lines = bufio.NewScanner(r)
	t.Cleanup(func() {
		c.kill()
		r.Close()
	})
	return c
}

// next returns the child's next line; it fails the test if the child ended
// without one.
func (c *child) next() string {
	c.t.Helper()
	line, ok := c.nextOrEnd()
	if !ok {
		c.t.Fatalf("child ended without reporting; its output:\n%s", c.output())
	}
	return line
}

// nextOrEnd returns the child's next line, or false once the child ended.
func (c *child) nextOrEnd() (string, bool) {
	if !c.lines.Scan() {
		return "", false
	}
	return c.lines.Text(), true
}

// output returns what the child wrote on stdout and stderr; it kills the
// child first.
func (c *child) output() string {
	c.kill()
	return c.out.String()
}

// kill ends the child with SIGKILL and waits for it: its files on the
// mount are closed when kill returns.
func (c *child) kill() {
	if c.cmd.ProcessState != nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	_ = c.cmd.Wait()
	c.stdin.Close()
}

// parent is the child's side of the pipe.
var parent = os.NewFile(3, "parent")

// report sends a line to the parent test.
func report(format string, args ...any) {
	fmt.Fprintf(parent, format+"\n", args...)
}

// block waits to be killed (or for the parent to go away).
func block() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(2)
}

// fail reports a failure the parent turns into a test failure, and exits.
func fail(format string, args ...any) {
	report("error "+format, args...)
	os.Exit(3)
}
