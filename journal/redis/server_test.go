package redis_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentonce/agentonce/journal"
	redisjournal "github.com/agentonce/agentonce/journal/redis"
)

// server is a redis-server (or valkey-server) of the test's own, in a
// directory of its own, on a free loopback port.
type server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	args []string
	cmd  *exec.Cmd
}

// startServer starts a server with extra configuration args. It needs the
// server binary and the shared test server (so that CI, which has both,
// never skips it).
func startServer(t *testing.T, args ...string) *server {
	redisURL(t)
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if bin, err = exec.LookPath("valkey-server"); err != nil {
			t.Skip("no redis-server or valkey-server on PATH")
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &server{t: t, bin: bin, dir: t.TempDir(), port: port, args: args}
	s.start()
	t.Cleanup(func() { s.kill() })
	return s
}

func (s *server) start() {
	args := append([]string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir, "--save", ""}, s.args...)
	s.cmd = exec.Command(s.bin, args...)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	c := s.client()
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			s.t.Fatalf("%s on port %d did not answer within 20 s", s.bin, s.port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill ends the server with SIGKILL: no shutdown, no final fsync.
func (s *server) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}

func (s *server) client() *goredis.Client {
	return goredis.NewClient(&goredis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", s.port), MaxRetries: -1})
}

// TestRefusesUnsyncedServer: a server that acknowledges writes before they
// are on disk is refused unless the caller accepts that explicitly.
func TestRefusesUnsyncedServer(t *testing.T) {
	for _, args := range [][]string{
		{"--appendonly", "no"},
		{"--appendonly", "yes", "--appendfsync", "everysec"},
	} {
		srv := startServer(t, args...)
		c := srv.client()
		_, err := redisjournal.New(context.Background(), c, nil)
		if !errors.Is(err, redisjournal.ErrNotDurable) {
			t.Errorf("New on a server with %v: %v; want ErrNotDurable", args, err)
		}
		s, err := redisjournal.New(context.Background(), c, &redisjournal.Options{AllowUnsyncedWrites: true})
		if err != nil {
			t.Errorf("New with AllowUnsyncedWrites on a server with %v: %v", args, err)
		} else {
			s.Close()
		}
		c.Close()
	}
}

// TestWriteAheadSurvivesSIGKILL: a durable Begin acknowledged by a server
// with appendfsync always is there after the server is killed and
// restarted, and so is a completed outcome: the agent that comes back
// answers from the journal instead of running the tool again.
func TestWriteAheadSurvivesSIGKILL(t *testing.T) {
	srv := startServer(t, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	c := srv.client()
	s, err := redisjournal.New(ctx, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	pending, done := uuid.New(), uuid.New()
	if _, err := s.Begin(ctx, journal.BeginRequest{Key: pending, Owner: "a", AttemptID: "p1", Durable: true}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Begin(ctx, journal.BeginRequest{Key: done, Owner: "a", AttemptID: "d1", Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, journal.Completion{Key: done, Token: res.Token, State: journal.StateSucceeded, Output: []byte(`{"ok":true}`)}); err != nil {
		t.Fatal(err)
	}
	ns := s.Namespace()
	srv.kill()
	c.Close()

	srv.start()
	c = srv.client()
	defer c.Close()
	s2, err := redisjournal.New(ctx, c, nil)
	if err != nil {
		t.Fatalf("New after SIGKILL: %v", err)
	}
	if s2.Namespace() != ns {
		t.Errorf("Namespace after SIGKILL = %s; want %s", s2.Namespace(), ns)
	}
	if r, err := s2.Get(ctx, pending); err != nil || r.State != journal.StatePending {
		t.Errorf("write-ahead record after SIGKILL: %v, %v; want pending", r.State, err)
	}
	again, err := s2.Begin(ctx, journal.BeginRequest{Key: done, Owner: "b", AttemptID: "d2"})
	if err != nil || again.Outcome != journal.Answered || string(again.Record.Output) != `{"ok":true}` {
		t.Errorf("Begin of the completed intent after SIGKILL = %v %s, %v; want Answered with its output", again.Outcome, again.Record.Output, err)
	}
}
