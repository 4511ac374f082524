package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// config is what one run measures.
type config struct {
	url      string
	database string // created when missing; empty: the URL's
	reps     int
	steps    int
	workers  int
	only     string // comma-separated system names; empty: all
	// settle is how long to wait after a segment before reading the
	// server's counters, once the system's sessions were asked to publish
	// their statistics. Zero means 300 ms (the WAL writer flushes
	// asynchronous commits within 200 ms).
	settle time.Duration
	// walDir, when set, is the server's pg_wal directory, which waldump
	// (pg_waldump) reads to count each segment's own WAL.
	walDir  string
	waldump string
	// serverCPU, when set, reads each segment's server CPU time from
	// /proc/<pid>/schedstat of the system's backends: the server must run
	// on this host, readable by this user.
	serverCPU bool
	// warmup is how many steps per worker the warm-up runs; zero means
	// warmupPerWorker.
	warmup int
}

// counters are the server's figures a segment is measured by.
type counters struct {
	lsn        string
	walBytes   float64 // pg_current_wal_lsn
	walRecords int64   // pg_stat_wal
	walFPI     int64
	commits    int64 // pg_stat_database.xact_commit of the database
}

// segment is one system's steps in one mode of one repetition.
type segment struct {
	elapsed time.Duration
	steps   int
	lat     []time.Duration // each step's time, sequentially
	delta   counters
	own     *walShare     // the segment's own WAL, with -waldir
	cpu     time.Duration // the server's CPU time in the system's backends, with -servercpu
}

func (s segment) perStep() time.Duration { return s.elapsed / time.Duration(s.steps) }

// latMedian and latMin are the median and the shortest of the segment's
// step times, in microseconds.
func (s segment) latMedian() float64 { return medianOf(micros(s.lat)) }
func (s segment) latMin() float64    { return slices.Min(micros(s.lat)) }

func micros(ds []time.Duration) []float64 {
	vs := make([]float64, len(ds))
	for i, d := range ds {
		vs[i] = float64(d) / float64(time.Microsecond)
	}
	return vs
}
func (s segment) rate() float64 { return float64(s.steps) / s.elapsed.Seconds() }

// walPerStep is the segment's own WAL per step when it was read with
// pg_waldump, else the server's.
func (s segment) walPerStep() float64 {
	if s.own != nil {
		return float64(s.own.bytes) / float64(s.steps)
	}
	return s.delta.walBytes / float64(s.steps)
}
func (s segment) per(n int64) float64 { return float64(n) / float64(s.steps) }

// warmupPerWorker is how many steps per worker the warm-up runs before a
// system's segments.
const warmupPerWorker = 8

const (
	seqMode  = "seq"
	concMode = "conc"
)

// run measures every system cfg names and writes the table to out.
func run(ctx context.Context, cfg config, out io.Writer) error {
	if cfg.settle == 0 {
		cfg.settle = 300 * time.Millisecond
	}
	if cfg.warmup == 0 {
		cfg.warmup = warmupPerWorker
	}
	if cfg.workers < 1 || cfg.steps < 1 || cfg.reps < 1 {
		return fmt.Errorf("reps, steps and workers must be positive (got %d, %d, %d)", cfg.reps, cfg.steps, cfg.workers)
	}
	dbURL, err := database(ctx, cfg.url, cfg.database)
	if err != nil {
		return err
	}
	chosen, err := choose(cfg.only)
	if err != nil {
		return err
	}
	mon, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", cfg.database, err)
	}
	defer mon.Close(context.WithoutCancel(ctx))
	if err := describeServer(ctx, mon, out); err != nil {
		return err
	}
	var dbOID uint32
	if err := mon.QueryRow(ctx, `SELECT oid FROM pg_database WHERE datname = current_database()`).Scan(&dbOID); err != nil {
		return err
	}
	suffix := randomSuffix()
	schemas := map[string]string{}
	for _, sys := range chosen {
		schemas[sys.name] = "peer_" + strings.ReplaceAll(sys.name, "-", "_") + "_" + suffix
	}
	defer func() {
		for _, schema := range schemas {
			_, _ = mon.Exec(context.WithoutCancel(ctx), `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
		}
	}()

	results := map[string]map[string][]segment{} // system, mode, repetition
	for _, sys := range chosen {
		results[sys.name] = map[string][]segment{}
	}
	for rep := range cfg.reps {
		for i := range chosen {
			sys := chosen[(i+rep)%len(chosen)] // each repetition starts with another system
			o, err := sys.open(ctx, dbURL, schemas[sys.name], cfg.workers+4)
			if err != nil {
				return fmt.Errorf("%s: %w", sys.name, err)
			}
			// Warm up: connections, prepared statements, the first pages,
			// and the server's plan cache. A prepared statement is planned
			// anew (a custom plan) at each of its first five executions on
			// a connection, and then once more for the generic plan it keeps
			// if that is no costlier: eight steps per worker take each
			// connection past that, to the steady state of a long-running
			// process's pool. Two per worker left every connection's first
			// plans in the measured segments, about 6 ms of server time per
			// connection for agentonce's statements, which plan in 0.4 to
			// 1 ms, and little for the others' small ones.
			err = concurrent(ctx, o, cfg.workers, calls(o, cfg.warmup*cfg.workers))
			for _, mode := range []string{seqMode, concMode} {
				if err != nil {
					break
				}
				var seg segment
				seg, err = measure(ctx, mon, cfg, o, mode, dbOID)
				results[sys.name][mode] = append(results[sys.name][mode], seg)
			}
			o.close()
			if err != nil {
				return fmt.Errorf("%s, repetition %d: %w", sys.name, rep+1, err)
			}
		}
	}
	report(out, cfg, chosen, results)
	return nil
}

// measure runs cfg.steps steps in mode and reads the server's counters
// around them.
func measure(ctx context.Context, mon *pgx.Conn, cfg config, o *opened, mode string, db uint32) (segment, error) {
	if err := publish(ctx, o.pools); err != nil { // the warm-up's, or the last segment's
		return segment{}, err
	}
	time.Sleep(cfg.settle)
	before, err := readCounters(ctx, mon)
	if err != nil {
		return segment{}, err
	}
	var cpuBefore map[int32]time.Duration
	if cfg.serverCPU {
		if cpuBefore, err = backendCPU(ctx, mon); err != nil {
			return segment{}, err
		}
	}
	n := calls(o, cfg.steps)
	var lat []time.Duration
	start := time.Now()
	if mode == seqMode {
		lat = make([]time.Duration, 0, n*o.perCall)
		last := start
		done := func() {
			now := time.Now()
			lat = append(lat, now.Sub(last))
			last = now
		}
		for range n {
			if err := o.call(ctx, done); err != nil {
				return segment{}, err
			}
		}
	} else if err := concurrent(ctx, o, cfg.workers, n); err != nil {
		return segment{}, err
	}
	elapsed := time.Since(start)
	var cpu time.Duration
	if cfg.serverCPU {
		after, err := backendCPU(ctx, mon)
		if err != nil {
			return segment{}, err
		}
		for pid, t := range after {
			cpu += t - cpuBefore[pid] // a backend started during the segment counts whole
		}
	}
	if err := publish(ctx, o.pools); err != nil {
		return segment{}, err
	}
	time.Sleep(cfg.settle)
	after, err := readCounters(ctx, mon)
	if err != nil {
		return segment{}, err
	}
	seg := segment{elapsed: elapsed, steps: n * o.perCall, lat: lat, cpu: cpu, delta: counters{
		walBytes:   after.walBytes - before.walBytes,
		walRecords: after.walRecords - before.walRecords,
		walFPI:     after.walFPI - before.walFPI,
		// The monitor's first read and the publishing are transactions of
		// the segment's too; they write nothing, and are taken back.
		commits: after.commits - before.commits - 1 - int64(publishedSessions(o.pools)),
	}}
	if cfg.walDir != "" {
		share, err := dumpShare(ctx, cfg.waldump, cfg.walDir, db, before.lsn, after.lsn)
		if err != nil {
			return segment{}, err
		}
		seg.own = &share
	}
	return seg, nil
}

// backendCPU returns the CPU time so far of every other client backend of
// the monitor's database, from /proc/<pid>/schedstat (its first field: the
// nanoseconds the task ran). Only the measured system's sessions are open
// in that database while it runs.
func backendCPU(ctx context.Context, mon *pgx.Conn) (map[int32]time.Duration, error) {
	rows, err := mon.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()
		AND pid <> pg_backend_pid() AND backend_type = 'client backend'`)
	if err != nil {
		return nil, err
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, err
	}
	cpu := make(map[int32]time.Duration, len(pids))
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
		if errors.Is(err, fs.ErrNotExist) {
			continue // the session ended meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("-servercpu needs the server on this host: %w", err)
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return nil, fmt.Errorf("/proc/%d/schedstat: %q", pid, b)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/schedstat: %w", pid, err)
		}
		cpu[pid] = time.Duration(ns)
	}
	return cpu, nil
}

// publish asks every idle session of pools to publish its statistics now
// (a backend otherwise holds them up to 10 s), so that the counters read
// next include the segment's.
func publish(ctx context.Context, pools []*pgxpool.Pool) error {
	for _, p := range pools {
		for _, c := range p.AcquireAllIdle(ctx) {
			_, err := c.Exec(ctx, `SELECT pg_stat_force_next_flush()`)
			c.Release()
			if err != nil {
				return fmt.Errorf("publishing statistics: %w", err)
			}
		}
	}
	return nil
}

// publishedSessions is how many sessions publish asked, as far as it can
// tell afterwards: the pools' idle connections.
func publishedSessions(pools []*pgxpool.Pool) int {
	n := 0
	for _, p := range pools {
		n += int(p.Stat().IdleConns())
	}
	return n
}

// calls is how many of o's calls make at least steps steps.
func calls(o *opened, steps int) int { return (steps + o.perCall - 1) / o.perCall }

// concurrent makes n of o's calls on workers goroutines.
func concurrent(ctx context.Context, o *opened, workers, n int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := o.call(ctx, func() {}); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func readCounters(ctx context.Context, mon *pgx.Conn) (counters, error) {
	var c counters
	err := mon.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text, (pg_current_wal_lsn() - '0/0'::pg_lsn)::float8,
		w.wal_records, w.wal_fpi, (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())
		FROM pg_stat_wal w`).Scan(&c.lsn, &c.walBytes, &c.walRecords, &c.walFPI, &c.commits)
	if err != nil {
		return c, fmt.Errorf("reading the server's statistics: %w", err)
	}
	return c, nil
}

// database returns the URL of the database name on the server at base,
// creating it when missing; an empty name means base as it is.
func database(ctx context.Context, base, name string) (string, error) {
	if name == "" {
		return base, nil
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("-database needs a postgres:// URL, not %q (or pass -database '')", base)
	}
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", fmt.Errorf("connecting to the server: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize())
	var pe *pgconn.PgError
	if err != nil && !(errors.As(err, &pe) && pe.Code == "42P04") { // duplicate_database
		return "", fmt.Errorf("creating database %s: %w", name, err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

func choose(only string) ([]system, error) {
	if only == "" {
		return systems, nil
	}
	var chosen []system
	for _, name := range strings.Split(only, ",") {
		i := slices.IndexFunc(systems, func(s system) bool { return s.name == strings.TrimSpace(name) })
		if i < 0 {
			return nil, fmt.Errorf("-only: no system %q (have %s)", name, systemNames())
		}
		chosen = append(chosen, systems[i])
	}
	return chosen, nil
}

func describeServer(ctx context.Context, mon *pgx.Conn, out io.Writer) error {
	var version, fsync, syncCommit string
	err := mon.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('fsync'),
		current_setting('synchronous_commit')`).Scan(&version, &fsync, &syncCommit)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "PostgreSQL %s, fsync=%s, synchronous_commit=%s\n", version, fsync, syncCommit)
	return nil
}

func randomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// quietLogger keeps DBOS's informational logging off the table.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
