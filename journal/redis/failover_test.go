package redis_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	redisjournal "github.com/agentonce/agentonce/journal/redis"
)

// effects is the downstream of an Unkeyed tool: it counts the effects of
// each intent, and answers reconciliation from those counts.
type effects struct {
	mu sync.Mutex
	n  map[string]int // by the call's id in its input
}

func (e *effects) tool() harness.Tool {
	id := func(in json.RawMessage) string {
		var v struct{ ID string }
		_ = json.Unmarshal(in, &v)
		return v.ID
	}
	return harness.Tool{Name: "charge", Effect: journal.Unkeyed, Settle: time.Second, Timeout: 2 * time.Second,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.n[id(in)]++
			return json.RawMessage(`{"ok":true}`), nil
		},
		Reconcile: func(ctx context.Context, key uuid.UUID, in json.RawMessage) downstream.Reconciliation {
			e.mu.Lock()
			defer e.mu.Unlock()
			if e.n[id(in)] > 0 {
				return downstream.Happened(json.RawMessage(`{"ok":true}`))
			}
			return downstream.DidNotHappen()
		}}
}

func (e *effects) count(id string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n[id]
}

// tally is what a run of calls came to: intents, effects run more than
// once, answers the effects contradict, and intents whose outcome the
// harness could not yet tell.
type tally struct{ intents, duplicates, falseAnswers, unknown int }

func (t tally) String() string {
	return fmt.Sprintf("%d intents, %d duplicates, %d false answers, %d unknown left", t.intents, t.duplicates, t.falseAnswers, t.unknown)
}

// judge counts, for the last result of each intent, a duplicate (more
// than one effect), a false answer (Succeeded with no effect; Failed,
// Rejected or Suppressed, which say nothing took effect, after one) and
// an unknown outcome (Unknown, InProgress).
func judge(e *effects, last map[string]harness.Result) tally {
	t := tally{intents: len(last)}
	for id, r := range last {
		n := e.count(id)
		switch {
		case n > 1:
			t.duplicates++
		case r.Status == harness.Succeeded:
			if n != 1 {
				t.falseAnswers++
			}
		case r.Status == harness.Unknown || r.Status == harness.InProgress:
			t.unknown++
		case n != 0:
			t.falseAnswers++
		}
	}
	return t
}

// TestClusterReshardAndFailover runs calls of an Unkeyed tool through the
// harness on a cluster (one replica acknowledging each write) while
// slots move between masters, then while a master is killed with SIGKILL
// and its replica promoted; then calls every intent again, as an agent
// retrying would. No effect may run twice and no answer may be false;
// what is left unknown is reported. It runs under AGENTONCE_LONG=1, as CI
// sets it.
func TestClusterReshardAndFailover(t *testing.T) {
	if os.Getenv("AGENTONCE_LONG") != "1" {
		t.Skip("about 25 s: AGENTONCE_LONG=1 runs it")
	}
	c := startCluster(t)
	ctx := context.Background()
	store, err := journal.Open(ctx, c.url("replicas=1&prefix=failover"), nil)
	if err != nil {
		t.Fatalf("journal.Open(%s): %v", c.url("replicas=1"), err)
	}
	defer store.Close()
	e := &effects{n: map[string]int{}}
	h := harness.New(store, &harness.Options{LeaseTTL: 3 * time.Second, CheckWait: time.Second})
	defer h.Close()
	if err := h.Register(e.tool()); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	last := map[string]harness.Result{}
	call := func(id string) {
		r := h.Call(ctx, harness.ToolCall{Tenant: "acme", Session: "s-" + id, Turn: "1", Tool: "charge",
			Input: json.RawMessage(`{"id":"` + id + `"}`)})
		mu.Lock()
		last[id] = r
		mu.Unlock()
	}
	var next atomic.Int64
	load := func(stop <-chan struct{}) *sync.WaitGroup {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					call(fmt.Sprintf("i%d", next.Add(1)))
				}
			})
		}
		return &wg
	}

	tags := func() (m []int) {
		for i := range 64 {
			m = append(m, c.masterOf(fmt.Sprintf("{failover:%02x}:created", i)))
		}
		return m
	}
	before := tags()
	stop := make(chan struct{})
	wg := load(stop)
	time.Sleep(300 * time.Millisecond)
	src, dst := before[0], (before[0]+1)%3 // masters are nodes 0-2 as created
	c.redisCLI("--cluster", "reshard", c.addr(src), "--cluster-from", c.nodeID(src), "--cluster-to", c.nodeID(dst),
		"--cluster-slots", "3000", "--cluster-yes", "--cluster-pipeline", "10")
	close(stop)
	wg.Wait()
	resharded := judge(e, last)
	moved := 0
	for i, m := range tags() {
		if m != before[i] {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("the reshard moved none of the journal's 64 hash tags")
	}
	t.Logf("the reshard moved %d of the journal's 64 hash tags to another master", moved)

	stop = make(chan struct{})
	wg = load(stop)
	time.Sleep(500 * time.Millisecond)
	victim := c.masterOf("{failover:00}:created")
	c.nodes[victim].kill()
	c.waitPromoted(victim, "{failover:00}:created")
	c.waitOK()
	c.nodes[victim].start() // rejoins as its successor's replica, which WAIT needs
	c.waitOK()
	close(stop)
	wg.Wait()
	failedOver := judge(e, last)

	for round := 0; round < 10; round++ {
		var open []string
		for id, r := range last {
			if r.Status != harness.Succeeded {
				open = append(open, id)
			}
		}
		if len(open) == 0 {
			break
		}
		for _, id := range open {
			call(id)
		}
		time.Sleep(time.Second)
	}
	retried := judge(e, last)
	for id := range last {
		call(id) // every intent once more: answered from the journal
	}
	again := judge(e, last)
	for id, r := range last {
		if r.Status == harness.Unknown || r.Status == harness.InProgress {
			rec, err := store.Get(ctx, r.Key)
			t.Logf("left unknown: %s: %v %v (effects %d); record %v %v attempts %d lease %v, now %v", id, r.Status, r.Err, e.count(id), rec.State, err, len(rec.Attempts), rec.Lease, time.Now())
		}
	}
	t.Logf("reshard under load: %v", resharded)
	t.Logf("master killed, replica promoted, old master back as replica: %v", failedOver)
	t.Logf("after re-calling the unsettled intents: %v", retried)
	t.Logf("after calling every intent again: %v", again)
	for _, r := range []tally{resharded, failedOver, retried, again} {
		if r.duplicates != 0 || r.falseAnswers != 0 {
			t.Errorf("%v; want 0 duplicates and 0 false answers", r)
		}
	}
	if again.intents < 20 {
		t.Errorf("only %d intents ran; the load did not reach the cluster", again.intents)
	}
}

// addr is node i's address.
func (c *cluster) addr(i int) string { return fmt.Sprintf("127.0.0.1:%d", c.nodes[i].port) }

// nodeID is node i's cluster node id.
func (c *cluster) nodeID(i int) string {
	cl := c.nodes[i].client()
	defer cl.Close()
	id, err := cl.Do(context.Background(), "cluster", "myid").Text()
	if err != nil {
		c.t.Fatal(err)
	}
	return id
}

// waitPromoted waits until a node other than victim serves key's slot.
func (c *cluster) waitPromoted(victim int, key string) {
	deadline := time.Now().Add(60 * time.Second)
	for c.masterOf(key) == victim {
		if time.Now().After(deadline) {
			c.t.Fatalf("no replica took over from node %d within 60 s", victim)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// masterOf is the index of the node that serves key's slot, as a running
// node sees it.
func (c *cluster) masterOf(key string) int {
	n := c.nodes[0]
	for _, m := range c.nodes {
		if m.cmd != nil {
			n = m
			break
		}
	}
	cl := n.client()
	defer cl.Close()
	slot, err := cl.ClusterKeySlot(context.Background(), key).Result()
	if err != nil {
		c.t.Fatal(err)
	}
	shards, err := cl.ClusterSlots(context.Background()).Result()
	if err != nil {
		c.t.Fatal(err)
	}
	for _, s := range shards {
		if int64(s.Start) <= slot && slot <= int64(s.End) {
			for i := range c.nodes {
				if strings.HasSuffix(s.Nodes[0].Addr, fmt.Sprintf(":%d", c.nodes[i].port)) {
					return i
				}
			}
		}
	}
	c.t.Fatalf("no master serves slot %d", slot)
	return 0
}

// TestClusterReplicaAcknowledgement shows what Options.Replicas is for. A
// store that does not wait for a replica is refused on a cluster with
// replicas, one that waits for more replicas than a master has too, and
// one on a cluster with a node that does not fsync every write.
// Opened anyway (AllowUnsyncedWrites), it acknowledges a write-ahead
// record that only the master holds: its replica is stopped and cut off,
// the master killed, the replica promoted, and the record is gone, so that the
// intent would start (and an Unkeyed tool run) a second time. A store
// waiting for one replica does not acknowledge that write: its Begin says
// the outcome is uncertain.
func TestClusterReplicaAcknowledgement(t *testing.T) {
	c := startCluster(t)
	cc := c.client()
	ctx := context.Background()
	for _, n := range []int{0, 2} {
		_, err := redisjournal.New(ctx, cc, &redisjournal.Options{Prefix: "refused", Replicas: n})
		if !errors.Is(err, redisjournal.ErrNotDurable) {
			t.Errorf("New on a cluster with one replica per master, Replicas %d: %v; want ErrNotDurable", n, err)
		}
	}
	// A replica that a failover could promote, fsyncing once a second.
	rc := c.nodes[c.replicaOf(0)].client()
	if err := rc.ConfigSet(ctx, "appendfsync", "everysec").Err(); err != nil {
		t.Fatal(err)
	}

	_, err := redisjournal.New(ctx, cc, &redisjournal.Options{Prefix: "refused", Replicas: 1})
	if !errors.Is(err, redisjournal.ErrNotDurable) || !strings.Contains(err.Error(), rc.Options().Addr) {
		t.Errorf("New on a cluster with a replica on appendfsync everysec: %v; want ErrNotDurable naming %s", err, rc.Options().Addr)
	}
	rc.ConfigSet(ctx, "appendfsync", "always")
	rc.Close()
	unwaited, err := redisjournal.New(ctx, cc, &redisjournal.Options{Prefix: "unwaited", AllowUnsyncedWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	waited, err := redisjournal.New(ctx, cc, &redisjournal.Options{Prefix: "waited", Replicas: 1, ReplicaTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// Two keys whose records lie on one master.
	keyOn := func(prefix string, master int) uuid.UUID {
		for {
			k := uuid.New()
			if c.masterOf(fmt.Sprintf("{%s:%02x}:", prefix, int(k[0])%64)) == master {
				return k
			}
		}
	}
	lost := uuid.New()
	master := c.masterOf(fmt.Sprintf("{unwaited:%02x}:", int(lost[0])%64))
	kept := keyOn("waited", master)
	replica := c.replicaOf(master)

	// The replica stalls, and its link is cut (a stopped process's socket
	// would still take the master's writes into its buffer).
	c.nodes[replica].signal(syscall.SIGSTOP)
	mc := c.nodes[master].client()
	if err := mc.Do(ctx, "client", "kill", "type", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	mc.Close()
	begin := func(s *redisjournal.Store, k uuid.UUID) (journal.BeginResult, error) {
		return s.Begin(ctx, journal.BeginRequest{Key: k, Owner: "a", AttemptID: "a1", Durable: true, Effect: journal.Unkeyed})
	}
	if res, err := begin(unwaited, lost); err != nil || res.Outcome != journal.Started {
		t.Fatalf("Begin without waiting, replica stopped: %v, %v; want Started", res.Outcome, err)
	}
	if res, err := begin(waited, kept); !errors.Is(err, journal.ErrOutcomeUncertain) {
		t.Errorf("Begin waiting for a stopped replica: %v, %v; want ErrOutcomeUncertain", res.Outcome, err)
	}
	c.nodes[master].kill()
	c.nodes[replica].signal(syscall.SIGCONT)
	c.waitPromoted(master, fmt.Sprintf("{unwaited:%02x}:", int(lost[0])%64))

	_, err = unwaited.Get(ctx, lost)
	for deadline := time.Now().Add(30 * time.Second); err != nil && !errors.Is(err, journal.ErrNotFound) && time.Now().Before(deadline); {
		cc.ReloadState(ctx) // the client learns of the promotion lazily
		time.Sleep(100 * time.Millisecond)
		_, err = unwaited.Get(ctx, lost)
	}
	if !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("Get of the acknowledged record after the failover: %v; want it lost (ErrNotFound), as the promoted replica never had it", err)
	}
	res, err := begin(unwaited, lost)
	if err != nil || res.Outcome != journal.Started {
		t.Fatalf("Begin again after the failover: %v, %v", res.Outcome, err)
	}
	t.Logf("without waiting for a replica, an acknowledged write-ahead record was lost in the failover: the intent started twice")
	// The waiting store never said its intent started: whatever the
	// failover kept of it, a retry decides on what the journal holds now.
	if res, err := begin(waited, kept); err != nil && !errors.Is(err, journal.ErrOutcomeUncertain) {
		t.Errorf("Begin of the uncertain intent again after the failover: %v, %v", res.Outcome, err)
	}
}

// replicaOf is the index of master's replica.
func (c *cluster) replicaOf(master int) int {
	for i, n := range c.nodes {
		if i == master || n.cmd == nil {
			continue
		}
		cl := n.client()
		info, err := cl.Info(context.Background(), "replication").Result()
		cl.Close()
		if err == nil && strings.Contains(info, fmt.Sprintf("master_port:%d\r\n", c.nodes[master].port)) {
			return i
		}
	}
	c.t.Fatalf("node %d has no replica", master)
	return 0
}

// signal sends sig to the server (SIGSTOP, SIGCONT: a stalled node).
func (s *server) signal(sig syscall.Signal) {
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatal(err)
	}
}
