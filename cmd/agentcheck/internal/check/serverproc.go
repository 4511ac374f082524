package check

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// serverLease is the middleware's lease in a server process.
const serverLease = 2 * time.Second

// serverProc is the middleware downstream in a process of its own
// (Options.KillServer), on one loopback address for all its incarnations.
type serverProc struct {
	r    *runner
	addr string
	args []string

	mu      sync.Mutex // guards cmd, n and stopped
	cmd     *exec.Cmd
	n       int
	stopped bool
}

// startServer starts the first incarnation and waits until it listens.
func (r *runner) startServer(location string) (*serverProc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &serverProc{r: r, addr: addr, args: []string{"server", "-plan", filepath.Join(r.dir, "plan.json"),
		"-journal", location, "-log", filepath.Join(r.dir, "downstream.jsonl"),
		"-errlog", filepath.Join(r.dir, "server.log"), "-addr", addr,
		// A dead server's keys stay in flight for the lease: 2 s, not the
		// middleware's 30, or a run would see little but 409s after each
		// kill on PostgreSQL and Redis (bbolt's reopening ends them at
		// once).
		"-lease", serverLease.String()}}
	if r.o.Server.HandlerFailAfter {
		s.args = append(s.args, "-handler-5xx")
	}
	if r.o.Server.StoreServerErrors {
		s.args = append(s.args, "-store-5xx")
	}
	if r.o.Server.Reconcile {
		s.args = append(s.args, "-reconcile")
	}
	// The server reads the plan's intents; the runner rewrites the file
	// with the epoch and the URL before the workers start.
	if err := WritePlan(filepath.Join(r.dir, "plan.json"), r.plan); err != nil {
		return nil, err
	}
	if err := s.start(); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// start starts an incarnation and waits up to 30 s for it to listen.
func (s *serverProc) start() error {
	s.mu.Lock()
	s.n++
	proc := fmt.Sprintf("server.%d", s.n)
	cmd := exec.Command(s.r.o.Exe, append(s.args, "-owner", "agentcheck-"+proc)...)
	out, err := os.Create(filepath.Join(s.r.dir, proc+".log"))
	if err != nil {
		s.mu.Unlock()
		return err
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		out.Close()
		return fmt.Errorf("server: %w", err)
	}
	s.cmd = cmd
	s.mu.Unlock()
	go func() { _ = cmd.Wait(); out.Close() }()
	s.r.log.Add(Event{Ev: EvProc, Subject: "downstream", Note: fmt.Sprintf("start %s pid %d", proc, cmd.Process.Pid)})
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", s.addr); err == nil {
			c.Close()
			return nil
		}
	}
	return fmt.Errorf("server %s: not listening on %s after 30 s (log in %s)", proc, s.addr, filepath.Join(s.r.dir, proc+".log"))
}

// killLoop kills the server every 2 to 5 seconds until the run's end, and
// restarts it after 50 to 300 ms.
func (s *serverProc) killLoop(r *runner, stop <-chan struct{}) {
	r.every(2000, 5000, stop, func() bool {
		s.mu.Lock()
		cmd, proc := s.cmd, fmt.Sprintf("server.%d", s.n)
		s.mu.Unlock()
		r.sigkill(cmd, "downstream", proc)
		time.Sleep(r.randMS(50, 300))
		if err := s.start(); err != nil {
			r.problem("%v", err)
			return false
		}
		return true
	})
}

// wait waits up to timeout for the server's requests in progress to end.
func (s *serverProc) wait(timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get("http://" + s.addr + "/running")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
		resp.Body.Close()
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n <= 0 {
			return true
		}
	}
	return false
}

// stop kills the server for good.
func (s *serverProc) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped && s.cmd != nil {
		s.stopped = true
		_ = s.cmd.Process.Kill()
	}
}
