package redis_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentonce/agentonce/internal/journaltest"
	"github.com/agentonce/agentonce/journal"
	redisjournal "github.com/agentonce/agentonce/journal/redis"
	"github.com/agentonce/agentonce/keyderive"
)

// cluster is a Redis cluster of the test's own: three masters and three
// replicas on loopback, each fsyncing every write, in directories of their
// own, with a short cluster-node-timeout so that a killed master's replica
// takes over within seconds.
type cluster struct {
	t     testing.TB
	cli   string
	nodes []*server
}

// clusterNodeTimeout is how long the nodes wait before a silent master is
// failed over.
const clusterNodeTimeout = 2000

// serverBins returns redis-server (or valkey-server) and its CLI, skipping
// the test without them, or failing it under AGENTONCE_REQUIRE_REDIS (as
// .ci/run sets it).
func serverBins(t testing.TB) (server, cli string) {
	for _, pair := range [][2]string{{"redis-server", "redis-cli"}, {"valkey-server", "valkey-cli"}} {
		s, err1 := exec.LookPath(pair[0])
		c, err2 := exec.LookPath(pair[1])
		if err1 == nil && err2 == nil {
			return s, c
		}
	}
	if os.Getenv("AGENTONCE_REQUIRE_REDIS") != "" {
		t.Fatal("AGENTONCE_REQUIRE_REDIS is set but neither redis-server and redis-cli nor valkey-server and valkey-cli are on PATH")
	}
	t.Skip("a Redis cluster test needs redis-server and redis-cli (Debian's redis-server package) on PATH")
	return "", ""
}

// freePort returns a loopback port that is free, and whose cluster bus
// port (10000 above it) is free too.
func freePort(t testing.TB) int {
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

// startCluster starts the six nodes and joins them into a cluster, waiting
// until every node says it is ok.
func startCluster(t testing.TB) *cluster {
	bin, cli := serverBins(t)
	c := &cluster{t: t, cli: cli}
	var addrs []string
	for range 6 {
		port := freePort(t)
		s := &server{t: t, bin: bin, dir: t.TempDir(), port: port, args: []string{
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.Itoa(clusterNodeTimeout),
			"--appendonly", "yes", "--appendfsync", "always", "--repl-diskless-sync-delay", "0"}}
		s.start()
		t.Cleanup(s.kill)
		c.nodes = append(c.nodes, s)
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", port))
	}
	c.redisCLI(append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "1", "--cluster-yes")...)
	c.waitOK()
	return c
}

// redisCLI runs redis-cli with args, failing the test on an error.
func (c *cluster) redisCLI(args ...string) string {
	out, err := exec.Command(c.cli, args...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("%s %s: %v\n%s", c.cli, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// waitOK waits until every running node reports cluster_state:ok and
// every master sees each of its replicas in sync.
func (c *cluster) waitOK() {
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok := true
		for _, n := range c.nodes {
			if n.cmd == nil {
				continue
			}
			cl := n.client()
			info, err := cl.ClusterInfo(ctx).Result()
			repl, err2 := cl.Info(ctx, "replication").Result()
			cl.Close()
			if err != nil || err2 != nil || !strings.Contains(info, "cluster_state:ok") ||
				strings.Count(repl, ",state=") != strings.Count(repl, ",state=online,") {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatal("the cluster did not reach cluster_state:ok within 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// url is the cluster's location for journal.Open, with extra parameters.
func (c *cluster) url(params string) string {
	u := fmt.Sprintf("redis+cluster://127.0.0.1:%d/?addr=127.0.0.1:%d", c.nodes[0].port, c.nodes[1].port)
	if params != "" {
		u += "&" + params
	}
	return u
}

// client is a cluster client, closed with the test.
func (c *cluster) client() *goredis.ClusterClient {
	var addrs []string
	for _, n := range c.nodes {
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", n.port))
	}
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs})
	c.t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// TestCluster runs the conformance suite on a cluster, each subtest under
// a prefix of its own, with one replica acknowledging each write; and
// checks that a journal's records spread over every master while List and
// Stats see them all.
func TestCluster(t *testing.T) {
	c := startCluster(t)
	cc := c.client()
	open := func(t *testing.T, opts *journal.Options) *redisjournal.Store {
		o := &redisjournal.Options{Prefix: "test-" + uuid.NewString(), Replicas: 1, Journal: *cmp.Or(opts, new(journal.Options))}
		s, err := redisjournal.New(context.Background(), cc, o)
		if err != nil {
			t.Fatalf("redis.New on the cluster: %v", err)
		}
		return s
	}
	t.Run("Conformance", func(t *testing.T) {
		journaltest.Run(t, func(t *testing.T, opts *journal.Options) journal.Store { return open(t, opts) })
	})
	t.Run("Spread", func(t *testing.T) { testSpread(t, cc, open(t, nil)) })
}

// testSpread begins 200 intents, 20 of them awaiting approval, and finds
// their records on every master, listed newest first (the awaiting ones by
// their state, as agentctl queue lists them) and counted by Stats.
func testSpread(t *testing.T, cc *goredis.ClusterClient, s *redisjournal.Store) {
	ctx := context.Background()
	const n = 200
	awaiting := map[uuid.UUID]bool{}
	for i := range n {
		req := journal.BeginRequest{Key: uuid.New(), Owner: "o", AttemptID: "a", Durable: true,
			Intent: keyderive.Intent{Tenant: "t", Session: strconv.Itoa(i % 7), Tool: "charge"}}
		if i%10 == 0 { // awaiting a person's approval: agentctl queue's list
			req.Approvals, req.Fingerprint[0], awaiting[req.Key] = 1, 1, true
		}
		if _, err := s.Begin(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	for r, err := range s.List(ctx, journal.Filter{Tenant: "t", State: journal.StateAwaiting}) {
		if err != nil || !awaiting[r.Key] {
			t.Fatalf("List of awaiting records yielded %v, %v", r.Key, err)
		}
		delete(awaiting, r.Key)
	}
	if len(awaiting) != 0 {
		t.Errorf("List of awaiting records missed %d of %d", len(awaiting), n/10)
	}
	var mu sync.Mutex
	var perMaster []int
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *goredis.Client) error {
		keys, err := m.Keys(ctx, "*}:r:*").Result()
		mu.Lock()
		defer mu.Unlock()
		perMaster = append(perMaster, len(keys))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(perMaster) != 3 || slices.Contains(perMaster, 0) {
		t.Errorf("records per master: %v; want some on each of 3", perMaster)
	}
	var listed []journal.Record
	for r, err := range s.List(ctx, journal.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, r)
	}
	if len(listed) != n {
		t.Errorf("List yielded %d records; want %d", len(listed), n)
	}
	for i := 1; i < len(listed); i++ {
		if listed[i].Created.After(listed[i-1].Created) {
			t.Fatalf("List: record %d created %v after record %d's %v; want newest first", i, listed[i].Created, i-1, listed[i-1].Created)
		}
	}
	if st, err := s.Stats(ctx); err != nil || st.Records != n {
		t.Errorf("Stats = %d records, %v; want %d", st.Records, err, n)
	}
}

// BenchmarkClusterWait sets a new intent's Begin and Complete on a cluster
// waiting for one replica to acknowledge each write (wait1) beside the same
// without waiting (wait0), alternated in one loop so that both see the
// same machine; each reports its own mean per intent.
func BenchmarkClusterWait(b *testing.B) {
	c := startCluster(b)
	cc := c.client()
	ctx := context.Background()
	open := func(o redisjournal.Options) *redisjournal.Store {
		o.Prefix = "bench-" + uuid.NewString()
		s, err := redisjournal.New(ctx, cc, &o)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	stores := []*redisjournal.Store{open(redisjournal.Options{AllowUnsyncedWrites: true}), open(redisjournal.Options{Replicas: 1})}
	var spent [2]time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s := stores[i%2]
		t0 := time.Now()
		req := journal.BeginRequest{Key: uuid.New(), Owner: "o", AttemptID: "a", Durable: true, Effect: journal.Keyed,
			Intent: keyderive.Intent{Tenant: "t", Session: "s", Tool: "charge"}}
		res, err := s.Begin(ctx, req)
		if err == nil {
			_, err = s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded, Output: []byte(`{"ok":true}`)})
		}
		if err != nil {
			b.Fatal(err)
		}
		spent[i%2] += time.Since(t0)
	}
	half := float64(max(b.N/2, 1))
	b.ReportMetric(float64(spent[0].Microseconds())/half, "µs/wait0")
	b.ReportMetric(float64(spent[1].Microseconds())/half, "µs/wait1")
}

// TestOpenReplicasParameter: a replicas parameter that is not a count from
// 0 to 16 is refused, naming it, before any connection is made.
func TestOpenReplicasParameter(t *testing.T) {
	for _, v := range []string{"x", "-1", "17"} {
		_, err := redisjournal.Open(context.Background(), "redis+cluster://127.0.0.1:1/?replicas="+v, nil)
		if err == nil || !strings.Contains(err.Error(), "replicas=") {
			t.Errorf("Open with replicas=%s: %v; want an error naming the parameter", v, err)
		}
	}
}
