package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/agentonce/agentonce/cmd/agentcheck/internal/checktest"
)

// TestCheckCluster runs agentcheck -store redis with the agents' journal
// on a Redis cluster of the test's own (three masters, three replicas,
// each write waiting for one replica) for 15 s, then again with a master
// SIGKILLed halfway through by -failover; the test restarts it once its
// replica has taken over, and it rejoins as a replica. Each run must have
// no violation and leave none of its journal's keys on any master. It
// needs AGENTONCE_LONG=1 and redis-server and redis-cli (skipped without
// them unless AGENTONCE_REQUIRE_REDIS is set).
func TestCheckCluster(t *testing.T) {
	if os.Getenv("AGENTONCE_LONG") != "1" {
		t.Skip("AGENTONCE_LONG=1 runs the fault checker (.ci/run does)")
	}
	c := startCluster(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "agentcheck-redis")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	u := c.url() + "&replicas=1"
	args := []string{"-store", "redis", "-redis", u, "-seed", "6", "-duration", "15s", "-lease", "1500ms"}

	hist := filepath.Join(os.TempDir(), "agentcheck-redis-cluster-6.jsonl")
	sum := checktest.Run(t, bin, hist, args...)
	if !t.Failed() {
		os.Remove(hist)
	}
	for _, rep := range sum.Reports {
		t.Logf("seed %d: %d intents, %d calls, %d effects, %d kills; answers %v",
			rep.Seed, rep.Intents, rep.Calls, rep.Effects, rep.Kills, rep.Answers)
	}
	c.noKeysLeft(t, "{agentcheck_6_*")
	if t.Failed() {
		return
	}

	m := c.master(t)
	promoted := c.restartAfterFailover(t, m)
	hist = filepath.Join(os.TempDir(), "agentcheck-redis-cluster-failover-6.jsonl")
	m.mu.Lock()
	pid := m.cmd.Process.Pid
	m.mu.Unlock()
	sum = checktest.Run(t, bin, hist, append(args, "-failover", fmt.Sprintf("kill -9 %d", pid))...)
	if !t.Failed() {
		os.Remove(hist)
	}
	for _, rep := range sum.Reports {
		if rep.Failovers != 1 {
			t.Errorf("seed %d: %d failovers in the history; want 1", rep.Seed, rep.Failovers)
		}
		t.Logf("seed %d, master on port %d killed: %d intents, %d calls, %d effects, %d kills, %d failover; answers %v",
			rep.Seed, m.port, rep.Intents, rep.Calls, rep.Effects, rep.Kills, rep.Failovers, rep.Answers)
	}
	select {
	case <-promoted:
	default:
		t.Errorf("the killed master on port %d was not failed over and restarted by the end of the run", m.port)
	}
	c.noKeysLeft(t, "{agentcheck_6_*")
}

// cluster is a Redis cluster of the test's own: three masters and three
// replicas on loopback, each fsyncing every write, with a short
// cluster-node-timeout so that a killed master's replica takes over
// within seconds.
type cluster struct {
	cli   string
	nodes []*node
}

// nodeTimeoutMS is how long the nodes wait before a silent master is
// failed over.
const nodeTimeoutMS = 2000

// node is one redis-server of the cluster.
type node struct {
	bin, dir string
	port     int
	args     []string

	mu     sync.Mutex // guards cmd, exited and closed
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
	closed bool          // the test is over: start no more
}

// start starts the server and waits until it answers.
func (n *node) start() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return fmt.Errorf("node %d: the test is over", n.port)
	}
	args := append([]string{"--port", strconv.Itoa(n.port), "--bind", "127.0.0.1", "--dir", n.dir, "--save", ""}, n.args...)
	cmd := exec.Command(n.bin, args...)
	if err := cmd.Start(); err != nil {
		n.mu.Unlock()
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()
	c := n.client()
	defer c.Close()
	for deadline := time.Now().Add(20 * time.Second); c.Ping(context.Background()).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s on port %d did not answer within 20 s", n.bin, n.port)
		}
	}
	return nil
}

// stop kills the server with SIGKILL for good.
func (n *node) stop() {
	n.mu.Lock()
	n.closed = true
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Kill()
		<-exited
	}
}

func (n *node) client() *goredis.Client {
	return goredis.NewClient(&goredis.Options{Addr: n.addr(), MaxRetries: -1})
}

func (n *node) addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

// startCluster starts six nodes and joins them into a cluster, waiting
// until every node says it is ok. It skips the test without redis-server
// and redis-cli, or fails it under AGENTONCE_REQUIRE_REDIS.
func startCluster(t *testing.T) *cluster {
	bin, err1 := exec.LookPath("redis-server")
	cli, err2 := exec.LookPath("redis-cli")
	if err1 != nil || err2 != nil {
		if os.Getenv("AGENTONCE_REQUIRE_REDIS") != "" {
			t.Fatal("AGENTONCE_REQUIRE_REDIS is set but redis-server or redis-cli is not on PATH")
		}
		t.Skip("the cluster check needs redis-server and redis-cli (Debian's redis-server package) on PATH")
	}
	c := &cluster{cli: cli}
	var addrs []string
	for range 6 {
		n := &node{bin: bin, dir: t.TempDir(), port: freePort(t), args: []string{
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.Itoa(nodeTimeoutMS),
			"--appendonly", "yes", "--appendfsync", "always", "--repl-diskless-sync-delay", "0"}}
		t.Cleanup(n.stop)
		if err := n.start(); err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, n)
		addrs = append(addrs, n.addr())
	}
	args := append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !c.ok() {
		if time.Now().After(deadline) {
			t.Fatal("the cluster did not reach cluster_state:ok with every replica in sync within 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	return c
}

// freePort returns a loopback port that is free, and whose cluster bus
// port (10000 above it) is free too.
func freePort(t *testing.T) int {
	for range 100 {
		port := 20000 + rand.IntN(30000)
		free := true
		for _, p := range []int{port, port + 10000} {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				free = false
				break
			}
			l.Close()
		}
		if free {
			return port
		}
	}
	t.Fatal("no free port pair on loopback")
	return 0
}

// ok reports whether every node answers cluster_state:ok and every
// master sees its replicas in sync.
func (c *cluster) ok() bool {
	ctx := context.Background()
	for _, n := range c.nodes {
		cl := n.client()
		info, err := cl.ClusterInfo(ctx).Result()
		repl, err2 := cl.Info(ctx, "replication").Result()
		cl.Close()
		if err != nil || err2 != nil || !strings.Contains(info, "cluster_state:ok") ||
			strings.Count(repl, ",state=") != strings.Count(repl, ",state=online,") {
			return false
		}
	}
	return true
}

// role is a node's "role:" in INFO replication, or "" when it does not
// answer.
func (n *node) role() string {
	cl := n.client()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	repl, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		return ""
	}
	for line := range strings.Lines(repl) {
		if r, ok := strings.CutPrefix(strings.TrimSpace(line), "role:"); ok {
			return r
		}
	}
	return ""
}

// master returns a node that is a master now.
func (c *cluster) master(t *testing.T) *node {
	for _, n := range c.nodes {
		if n.role() == "master" {
			return n
		}
	}
	t.Fatal("no node of the cluster is a master")
	return nil
}

// restartAfterFailover waits, in the background, for m to die and for
// three other nodes to be masters (its replica promoted), then starts m
// again on its own directory: it rejoins as the new master's replica. The
// channel returned is closed once m is back.
func (c *cluster) restartAfterFailover(t *testing.T, m *node) <-chan struct{} {
	m.mu.Lock()
	exited := m.exited
	m.mu.Unlock()
	done, promoted := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(done); wg.Wait() })
	wg.Go(func() {
		select {
		case <-exited:
		case <-done:
			return
		}
		for {
			masters := 0
			for _, n := range c.nodes {
				if n != m && n.role() == "master" {
					masters++
				}
			}
			if masters == 3 {
				break
			}
			select {
			case <-time.After(100 * time.Millisecond):
			case <-done:
				return
			}
		}
		if err := m.start(); err != nil {
			t.Errorf("restarting the killed master: %v", err)
			return
		}
		close(promoted)
	})
	return promoted
}

// url is the cluster's location for journal.Open, naming two nodes.
func (c *cluster) url() string {
	return fmt.Sprintf("redis+cluster://%s/?addr=%s", c.nodes[0].addr(), c.nodes[1].addr())
}

// noKeysLeft fails t when a master holds a key matching pattern.
func (c *cluster) noKeysLeft(t *testing.T, pattern string) {
	t.Helper()
	var addrs []string
	for _, n := range c.nodes {
		addrs = append(addrs, n.addr())
	}
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs})
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *goredis.Client) error {
		it := m.Scan(ctx, 0, pattern, 1000).Iterator()
		if it.Next(ctx) {
			t.Errorf("the run left keys of its journal behind on %s, e.g. %s", m.Options().Addr, it.Val())
		}
		return it.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}
