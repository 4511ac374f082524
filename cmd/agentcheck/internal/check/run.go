package check

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

// Options configures Run. Zero values are defaults where a field says so.
type Options struct {
	Seed int64
	// Store is "bolt", "postgres" or "redis" (a key prefix of its own on
	// RedisURL, removed by DropRedis).
	Store string
	// PGURL is the PostgreSQL server (a postgres:// URL) for Store
	// "postgres"; Run works in a schema of its own and drops it.
	PGURL string
	// Duration is how long issues keep coming and workers keep being
	// killed; the final pass and the check come after it.
	Duration time.Duration
	// Workers is the number of agent processes running at once on
	// PostgreSQL; zero means 3. bbolt always runs one at a time.
	Workers int
	// Intents is the number of intents; zero means 10 per second.
	Intents int
	// Lease is the workers' Options.LeaseTTL; zero means 500ms.
	Lease time.Duration
	// NoSkew keeps every worker's journal clock true.
	NoSkew bool
	// NoKill turns off the SIGKILLs and the backend terminations.
	NoKill bool
	// Scenarios restricts the plan to these scenarios; empty means all.
	Scenarios []string
	// Exe is the agentcheck binary, started as "Exe worker …".
	Exe string
	// History is where the merged history is written; empty means a file
	// named for the store and seed in the system's temporary directory.
	History string
	// Progress, when set, gets a line per process event.
	Progress io.Writer
	// Corrupt, on bbolt, alters the stored output of that many intents in
	// the journal file before the final pass, as a disk that flips a bit
	// would: the harness must refuse them, never answer with them.
	Corrupt int
	// Downstream is the downstream's mode: ModeBuiltin (the default when
	// empty) or ModeMiddleware.
	Downstream string
	// ServerStore is, in ModeMiddleware, the middleware's journal:
	// "bolt" (a file in the work directory; the default when empty),
	// "postgres" (a schema of its own on PGURL, dropped after) or "redis"
	// (a key prefix of its own on RedisURL, removed by DropRedis).
	ServerStore string
	// RedisURL is the Redis server (redis://host:port/db) or cluster
	// (redis+cluster://host:port/?addr=host2:port2&replicas=1) for Store
	// or ServerStore "redis". The program must have registered the
	// schemes with journal.Register (by importing journal/redis).
	RedisURL string
	// DropRedis, when set, removes a Redis journal's keys after the run:
	// location is the journal's, with its prefix parameter.
	DropRedis func(ctx context.Context, location string) error
	// Failover is a shell command the runner runs once, halfway through
	// the run. On PostgreSQL it must lose the primary and promote a
	// standby, which PGURL names too (postgres://h1,h2/…?target_session_attrs=read-write),
	// so that the workers reconnect to it; on a Redis cluster it loses a
	// master, whose replica the cluster promotes. Empty means none; it is
	// ignored on bbolt.
	Failover string
	// Server holds ModeMiddleware's other choices.
	Server ServerOptions
	// KillServer, in ModeMiddleware, runs the server (middleware and
	// handler) in a process of its own, "Exe server …", killed with
	// SIGKILL every 2 to 5 seconds until the end and restarted.
	KillServer bool
}

// Run runs one check: the plan for o.Seed against real worker processes,
// the journal of o.Store and a loopback downstream, and returns the
// report. An error means the run could not be made at all.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Store != "bolt" && o.Store != "postgres" && o.Store != "redis" {
		return nil, fmt.Errorf("store %q: want bolt, postgres or redis", o.Store)
	}
	if o.Workers <= 0 {
		o.Workers = 3
	}
	switch o.Downstream {
	case "":
		o.Downstream = ModeBuiltin
	case ModeBuiltin, ModeMiddleware:
	default:
		return nil, fmt.Errorf("downstream %q: want %s or %s", o.Downstream, ModeBuiltin, ModeMiddleware)
	}
	if o.Downstream == ModeMiddleware && o.ServerStore == "" {
		o.ServerStore = "bolt"
	}
	dir, err := os.MkdirTemp("", "agentcheck-")
	if err != nil {
		return nil, err
	}
	r := &runner{o: o, dir: dir, rng: mrand.New(mrand.NewPCG(uint64(o.Seed), 0x72756e))}
	rep, err := r.run(ctx)
	if err == nil && !rep.Failed() {
		os.RemoveAll(dir)
	} else if rep != nil {
		rep.WorkDir = dir
	}
	return rep, err
}

type runner struct {
	o    Options
	dir  string
	plan *Plan
	log  *Log
	// location returns the journal location for a process.
	location func(proc string) string
	schema   string
	// dropAgents removes the agents' Redis journal after the run.
	dropAgents func()
	end        time.Time

	rmu sync.Mutex // guards rng
	rng *mrand.Rand

	mu       sync.Mutex // guards procs, problems and halted
	procs    map[int]*running
	problems []string
	halted   bool // no more restarts
}

// running is a worker process in its slot.
type running struct {
	cmd  *exec.Cmd
	proc string
}

// randInt draws from [lo, hi].
func (r *runner) randInt(lo, hi int) int {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	return lo + r.rng.IntN(hi-lo+1)
}

// randMS draws a duration from [lo, hi] milliseconds.
func (r *runner) randMS(lo, hi int) time.Duration {
	return time.Duration(r.randInt(lo, hi)) * time.Millisecond
}

func (r *runner) problem(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

func (r *runner) say(format string, args ...any) {
	if r.o.Progress != nil {
		fmt.Fprintf(r.o.Progress, "agentcheck: "+format+"\n", args...)
	}
}

// run is one check's steps: the downstream, the journal, the workers
// under faults until the end, the final pass, and the check of the
// history.
func (r *runner) run(ctx context.Context) (*Report, error) {
	r.plan = Generate(r.o.Seed, GenOptions{Store: r.o.Store, Workers: r.o.Workers, Duration: r.o.Duration,
		Intents: r.o.Intents, Lease: r.o.Lease, NoSkew: r.o.NoSkew, Scenarios: r.o.Scenarios})
	var err error
	if r.log, err = OpenLog(filepath.Join(r.dir, "runner.jsonl"), "runner"); err != nil {
		return nil, err
	}
	defer r.log.Close()
	down, err := r.startDownstream(ctx)
	defer down.close()
	if err != nil {
		return nil, err
	}
	r.plan.Downstream = down.url

	if err := r.prepareJournal(ctx); err != nil {
		return nil, err
	}
	if r.schema != "" {
		defer r.dropSchema()
	}
	if r.dropAgents != nil {
		defer r.dropAgents()
	}
	planFile, err := r.writePlan(down)
	if err != nil {
		return nil, err
	}
	r.runWorkers(ctx, planFile, down)
	r.finalPass(planFile, down)
	return r.report(ctx, down)
}

// service is the run's downstream as the runner drives it: in this
// process, or in a process of its own (Options.KillServer).
type service struct {
	url  string
	in   *Downstream // in this process, else nil
	proc *serverProc // in a process of its own, else nil
	// store is, in ModeMiddleware, the middleware's journal when it runs
	// in this process; location is where it is.
	store    journal.Store
	location string
	// closers end what startDownstream opened, the last first.
	closers []func()
}

// wait waits up to timeout for the downstream's requests in progress to
// end.
func (d *service) wait(timeout time.Duration) bool {
	if d.proc != nil {
		return d.proc.wait(timeout)
	}
	return d.in.Wait(timeout)
}

func (d *service) close() {
	for _, c := range slices.Backward(d.closers) {
		c()
	}
}

// startDownstream starts the downstream: the builtin one, or the
// middleware on a journal of its own, in this process or in one of its
// own. Close the downstream returned, error or not.
func (r *runner) startDownstream(ctx context.Context) (*service, error) {
	d := &service{}
	dlog, err := OpenLog(filepath.Join(r.dir, "downstream.jsonl"), "downstream")
	if err != nil {
		return d, err
	}
	d.closers = append(d.closers, func() { dlog.Close() })
	if r.o.Downstream == ModeMiddleware && r.o.KillServer {
		// The server's process writes the downstream's history itself.
		dlog.Close()
		location, drop, err := r.serverLocation()
		if err != nil {
			return d, err
		}
		d.closers = append(d.closers, drop)
		d.location = location
		if d.proc, err = r.startServer(location); err != nil {
			return d, err
		}
		d.closers = append(d.closers, d.proc.stop)
		d.url = "http://" + d.proc.addr
		return d, nil
	}
	d.in = NewDownstream(r.plan, dlog)
	if r.o.Downstream == ModeMiddleware {
		srv, drop, err := r.openServer(ctx)
		if err != nil {
			return d, err
		}
		d.closers = append(d.closers, drop, func() { srv.Close() })
		d.store = srv
		errLog, err := serverErrLog(filepath.Join(r.dir, "server.log"))
		if err != nil {
			return d, err
		}
		d.closers = append(d.closers, func() { errLog.Close() })
		if d.in, err = NewMiddlewareDownstream(r.plan, dlog, srv, r.o.Server, errLog); err != nil {
			return d, err
		}
	}
	url, closeDS, err := Serve(d.in)
	if err != nil {
		return d, err
	}
	d.closers = append(d.closers, closeDS)
	d.url = url
	return d, nil
}

// writePlan fixes the run's epoch and end and writes the plan for the
// workers.
func (r *runner) writePlan(down *service) (planFile string, err error) {
	// The workers need a moment to start before the first issue falls.
	epoch := time.Now().Add(700 * time.Millisecond)
	r.plan.Epoch = epoch.UnixNano()
	r.end = epoch.Add(r.o.Duration)
	planFile = filepath.Join(r.dir, "plan.json")
	if err := WritePlan(planFile, r.plan); err != nil {
		return "", err
	}
	r.say("%s seed %d: %d intents, %d workers, downstream %s (%s %s), work in %s",
		r.o.Store, r.o.Seed, len(r.plan.Intents), r.plan.Workers, down.url, r.o.Downstream, r.o.ServerStore, r.dir)
	return planFile, nil
}

// runWorkers runs the worker slots until the run's end, with the faults
// (kills, backend terminations, server kills) the options ask for, and
// waits for the downstream's requests to end.
func (r *runner) runWorkers(ctx context.Context, planFile string, down *service) {
	r.procs = map[int]*running{}
	stop := make(chan struct{})
	var faults sync.WaitGroup
	if down.proc != nil {
		faults.Go(func() { down.proc.killLoop(r, stop) })
	}
	if r.o.Failover != "" && r.o.Store != "bolt" {
		faults.Go(func() { r.failover(stop) })
	}
	if !r.o.NoKill {
		faults.Go(func() { r.kill(stop) })
		if r.schema != "" {
			faults.Go(func() { r.terminate(ctx, stop) })
		}
	}
	var workers sync.WaitGroup
	for slot := range r.plan.Workers {
		workers.Go(func() { r.supervise(planFile, slot) })
	}
	// The approver decides while the workers call; it is done before the
	// final pass.
	workers.Go(func() { r.newApprover().run(ctx) })
	hard := time.AfterFunc(time.Until(r.end)+90*time.Second, func() {
		r.problem("workers still running 90s after the end: killed")
		r.mu.Lock()
		r.halted = true
		r.mu.Unlock()
		r.killAll()
	})
	workers.Wait()
	hard.Stop()
	close(stop)
	faults.Wait()
	if !down.wait(15 * time.Second) {
		r.problem("downstream requests still running 15s after the workers ended")
	}
}

// finalPass corrupts the journal if asked, then re-issues every intent
// once in a last process, and stops a server process.
func (r *runner) finalPass(planFile string, down *service) {
	if r.o.Corrupt > 0 && r.o.Store == "bolt" {
		if err := r.corrupt(r.location("final"), r.o.Corrupt); err != nil {
			r.problem("corrupt the journal: %v", err)
		}
	}
	r.say("final pass")
	// The final pass re-issues every intent; one that is in progress may
	// wait out its in-flight budget, so the bound grows with the plan.
	final := max(90*time.Second, time.Duration(len(r.plan.Intents))*50*time.Millisecond)
	if err := r.runProc(planFile, 0, "final", true, final); err != nil {
		r.problem("final pass: %v", err)
	}
	down.wait(15 * time.Second)
	if down.proc != nil {
		down.proc.stop()
	}
}

// report merges the processes' histories, writes the merged history and
// checks it.
func (r *runner) report(ctx context.Context, down *service) (*Report, error) {
	paths, _ := filepath.Glob(filepath.Join(r.dir, "*.jsonl"))
	events, err := ReadHistory(paths...)
	if err != nil {
		return nil, err
	}
	hist := r.o.History
	if hist == "" {
		hist = filepath.Join(os.TempDir(), fmt.Sprintf("agentcheck-%s-%d.jsonl", r.o.Store, r.o.Seed))
	}
	if err := WriteHistory(hist, events); err != nil {
		return nil, err
	}
	rep := Check(r.plan, events)
	rep.History = hist
	if r.o.Downstream == ModeMiddleware {
		rep.Downstream = ModeMiddleware + "/" + r.o.ServerStore
		rep.ServerLog = readServerLog(filepath.Join(r.dir, "server.log"))
		if r.o.Server.HandlerFailAfter {
			rep.Downstream += " handler-5xx"
		}
		if r.o.Server.StoreServerErrors {
			rep.Downstream += " store-5xx"
		}
		if r.o.Server.Reconcile {
			rep.Downstream += " reconcile"
		}
		if rep.ServerUnknowns, err = r.serverUnknowns(ctx, down, events); err != nil {
			r.problem("counting the server's unknowns: %v", err)
		}
	}
	r.mu.Lock()
	rep.Problems = append(rep.Problems, r.problems...)
	r.mu.Unlock()
	return rep, nil
}

// prepareJournal picks the journal location: a bbolt file in the work
// directory, or a new schema on the PostgreSQL server.
func (r *runner) prepareJournal(ctx context.Context) error {
	switch r.o.Store {
	case "bolt":
		path := filepath.Join(r.dir, "agent.journal")
		r.location = func(string) string { return path }
		return nil
	case "redis":
		location, drop, err := r.redisLocation(fmt.Sprintf("agentcheck_%d_%s", uint64(r.o.Seed)%1_000_000, randomHex()))
		if err != nil {
			return err
		}
		r.location, r.dropAgents = func(string) string { return location }, drop
		return nil
	}
	if r.o.PGURL == "" {
		return errors.New("store postgres needs -pg URL or AGENTONCE_PG_URL")
	}
	u, err := url.Parse(r.o.PGURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return fmt.Errorf("-pg %q: want a postgres:// URL", r.o.PGURL)
	}
	r.schema = fmt.Sprintf("agentcheck_%d_%s", uint64(r.o.Seed)%1_000_000, randomHex())
	conn, err := pgx.Connect(ctx, r.o.PGURL)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	conn.Close(ctx)
	r.location = func(proc string) string {
		q := u.Query()
		q.Set("schema", r.schema)
		// The terminator finds a run's backends by this name.
		q.Set("application_name", r.schema+"/"+proc)
		v := *u
		v.RawQuery = q.Encode()
		return v.String()
	}
	return nil
}

func (r *runner) dropSchema() { r.dropPGSchema(r.schema) }

// dropPGSchema drops a schema of the run from the PostgreSQL server.
func (r *runner) dropPGSchema(schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, r.o.PGURL)
	if err != nil {
		r.problem("dropping schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		r.problem("dropping schema %s: %v", schema, err)
	}
}

// supervise runs a worker slot: it restarts the worker after each kill
// until the run's end.
func (r *runner) supervise(planFile string, slot int) {
	for inc := 1; ; inc++ {
		proc := fmt.Sprintf("w%d.%d", slot, inc)
		err := r.runProc(planFile, slot, proc, false, 0)
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.mu.Lock()
			halted := r.halted
			r.mu.Unlock()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && !halted {
				// Killed: the next incarnation re-issues what it left.
				time.Sleep(r.randMS(50, 300))
				continue
			}
		}
		if err != nil {
			r.problem("worker %s: %v (log in %s)", proc, err, filepath.Join(r.dir, proc+".log"))
		}
		return
	}
}

// runProc runs one worker process to its end. timeout > 0 kills it after
// that long.
func (r *runner) runProc(planFile string, slot int, proc string, final bool, timeout time.Duration) error {
	args := []string{"worker", "-plan", planFile, "-journal", r.location(proc),
		"-history", filepath.Join(r.dir, "hist-"+proc+".jsonl"), "-proc", proc, "-slot", fmt.Sprint(slot)}
	if final {
		args = append(args, "-final")
	}
	out, err := os.Create(filepath.Join(r.dir, proc+".log"))
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(r.o.Exe, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return err
	}
	r.log.Add(Event{Ev: EvProc, Subject: proc, Note: fmt.Sprintf("start %s pid %d", proc, cmd.Process.Pid)})
	r.say("start %s", proc)
	if !final {
		r.mu.Lock()
		r.procs[slot] = &running{cmd: cmd, proc: proc}
		r.mu.Unlock()
	}
	if timeout > 0 {
		t := time.AfterFunc(timeout, func() { _ = cmd.Process.Kill() })
		defer t.Stop()
	}
	err = cmd.Wait()
	if !final {
		r.mu.Lock()
		if p := r.procs[slot]; p != nil && p.cmd == cmd {
			delete(r.procs, slot)
		}
		r.mu.Unlock()
	}
	r.log.Add(Event{Ev: EvProc, Subject: proc, Note: fmt.Sprintf("exit %s: %v", proc, errText(err))})
	return err
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// openServer opens the middleware's journal (ModeMiddleware): a bbolt file
// in the work directory, a PostgreSQL schema of its own or a Redis key
// prefix of its own, never the agents' journal. drop removes the schema
// or the keys; call it after closing the store.
func (r *runner) openServer(ctx context.Context) (store journal.Store, drop func(), err error) {
	location, drop, err := r.serverLocation()
	if err != nil {
		return nil, nil, err
	}
	store, err = journal.Open(ctx, location, nil)
	if err != nil {
		drop()
		return nil, nil, fmt.Errorf("server journal: %w", err)
	}
	return store, drop, nil
}

// serverLocation names the middleware's journal, and returns the function
// that removes it (a schema, Redis keys) after the run.
func (r *runner) serverLocation() (location string, drop func(), err error) {
	name := fmt.Sprintf("agentcheck_server_%d_%s", uint64(r.o.Seed)%1_000_000, randomHex())
	drop = func() {}
	switch r.o.ServerStore {
	case "bolt":
		location = filepath.Join(r.dir, "server.journal")
	case "postgres":
		u, err := url.Parse(r.o.PGURL)
		if r.o.PGURL == "" || err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return "", nil, fmt.Errorf("server store postgres: -pg %q: want a postgres:// URL", r.o.PGURL)
		}
		q := u.Query()
		q.Set("schema", name)
		// Not the agents' application name: the terminator leaves the
		// server's backends alone.
		q.Set("application_name", name)
		u.RawQuery = q.Encode()
		location = u.String()
		drop = func() { r.dropPGSchema(name) }
	case "redis":
		return r.redisLocation(name)
	default:
		return "", nil, fmt.Errorf("server store %q: want bolt, postgres or redis", r.o.ServerStore)
	}
	return location, drop, nil
}

// serverUnknowns counts, in ModeMiddleware, the server journal's records
// left without an answer and those Reconcile settled: from the journal
// in this process, or, once the server process is stopped, from its
// location.
func (r *runner) serverUnknowns(ctx context.Context, down *service, history []Event) (*ServerUnknowns, error) {
	store := down.store
	if store == nil {
		var jopts *journal.Options
		if _, ok := journal.Scheme(down.location); !ok {
			// The killed server's lock goes with its death.
			jopts = &journal.Options{StoreOptions: &bolt.Options{LockTimeout: 20 * time.Second}}
		}
		st, err := journal.Open(ctx, down.location, jopts)
		if err != nil {
			return nil, err
		}
		defer st.Close()
		store = st
	}
	return countServerUnknowns(ctx, store, r.o.Server.Reconcile, history)
}

// redisLocation names a Redis journal under the key prefix name on
// RedisURL (one server, or a cluster by redis+cluster://), and returns the
// function that removes its keys after the run.
func (r *runner) redisLocation(name string) (location string, drop func(), err error) {
	u, err := url.Parse(r.o.RedisURL)
	if r.o.RedisURL == "" || err != nil || !slices.Contains([]string{"redis", "rediss", "redis+cluster", "rediss+cluster"}, u.Scheme) {
		return "", nil, fmt.Errorf("redis: %q: want a redis:// or redis+cluster:// URL (-redis or AGENTONCE_REDIS_URL)", r.o.RedisURL)
	}
	q := u.Query()
	q.Set("prefix", name)
	u.RawQuery = q.Encode()
	location, drop = u.String(), func() {}
	if r.o.DropRedis != nil {
		drop = func() {
			dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := r.o.DropRedis(dctx, location); err != nil {
				r.problem("removing a Redis journal's keys (prefix %s): %v", name, err)
			}
		}
	}
	return location, drop, nil
}

func randomHex() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
