package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// config is one sweep's settings.
type config struct {
	runtimes []runtime
	random   int    // random schedules per runtime and mode
	pairs    bool   // also every crash point of each resume
	crashes  int    // most crashes in a random schedule
	seed     int64  // of the random schedules
	parallel int    // schedules at once
	worker   string // the executable run as a worker
	pgURL    string
}

// maxRuns bounds the invocations of one schedule after its crashes: a
// run answered "pending" is run again, up to this many times.
const maxRuns = 6

// tally is what one mode of one runtime came to.
type tally struct {
	max          int      // most charges of one intent
	schedules    int      // schedules run
	points       int64    // crash points of a run without a crash
	person       int      // schedules left to an operator
	personDetail string   // the first such schedule's answer
	failures     []string // schedules that ended otherwise than charged
	worst        string   // the schedule that charged max times
	err          error    // the first schedule that could not be run
}

// row is one runtime's line of the table.
type row struct {
	name        string
	how         string
	plain, once tally
	skipped     string
}

// schedule is one run of a mode of a runtime: the crash point of each
// invocation in turn (then invocations without a crash).
type schedule struct {
	rt     runtime
	exe    string // the worker command
	mode   string
	intent string
	crash  []string // a point's number or name, per invocation
}

func sweep(ctx context.Context, c config) ([]row, error) {
	pay, err := startPayment()
	if err != nil {
		return nil, err
	}
	defer pay.close()
	base, err := os.MkdirTemp("", "maxfired-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(base)
	// The sweep's own id ends every intent: the DBOS workflows and the
	// PostgreSQL journal outlive a sweep.
	s := &sweeper{c: c, pay: pay, base: base, id: strconv.FormatInt(time.Now().UnixNano()%1e9, 36)}
	rows := make([]row, len(c.runtimes))
	for i, rt := range c.runtimes {
		rows[i] = row{name: rt.Name, how: rt.How}
		if rt.NeedsPG && c.pgURL == "" {
			rows[i].skipped = "AGENTONCE_PG_URL not set"
			continue
		}
		exe := c.worker
		if external[rt.Name] != "" {
			if exe, err = buildExternal(ctx, rt.Name, base); err != nil {
				rows[i].skipped = err.Error()
				continue
			}
		}
		for _, mode := range []string{"plain", "once"} {
			t, err := s.mode(ctx, rt, exe, mode)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", rt.Name, mode, err)
			}
			if mode == "plain" {
				rows[i].plain = t
			} else {
				rows[i].once = t
			}
		}
	}
	return rows, nil
}

type sweeper struct {
	c    config
	pay  *payment
	base string
	id   string
	mu   sync.Mutex
	n    int
}

// mode sweeps one mode of rt: a run without a crash numbers its points;
// then a crash at each point in turn; with pairs, a crash at each point
// of the run that resumes each of those; then the random schedules.
func (s *sweeper) mode(ctx context.Context, rt runtime, exe, mode string) (tally, error) {
	probe := s.schedule(rt, exe, mode, nil)
	out, _, err := s.run(ctx, probe)
	if err != nil {
		return tally{}, fmt.Errorf("a run without a crash: %w", err)
	}
	if n := s.pay.count(probe.intent); out.Status != "charged" || n != 1 {
		return tally{}, fmt.Errorf("a run without a crash ended %s with %d charges (%s); want charged once", out.Status, n, out.Detail)
	}
	t := &tally{points: out.Points, max: 1, schedules: 1, worst: "no crash"}
	var singles []schedule
	for p := int64(1); p <= out.Points; p++ {
		singles = append(singles, s.schedule(rt, exe, mode, []string{strconv.FormatInt(p, 10)}))
	}
	resumes := s.runAll(ctx, t, singles)
	var more []schedule
	if s.c.pairs {
		for i, sc := range singles {
			for q := int64(1); q <= resumes[i]; q++ {
				more = append(more, s.schedule(rt, exe, mode, append(slices.Clone(sc.crash), strconv.FormatInt(q, 10))))
			}
		}
	}
	// The worst case of a framework that runs the effect again: a crash
	// at the effect itself in every invocation.
	more = append(more, s.schedule(rt, exe, mode, slices.Repeat([]string{"effect"}, s.c.crashes)))
	seed := s.c.seed + int64(len(rt.Name))*1_000 + map[string]int64{"plain": 0, "once": 500}[mode]
	rnd := rand.New(rand.NewPCG(uint64(seed), 42))
	for range s.c.random {
		crash := make([]string, 1+rnd.IntN(s.c.crashes))
		for i := range crash {
			crash[i] = strconv.FormatInt(1+rnd.Int64N(out.Points), 10)
		}
		more = append(more, s.schedule(rt, exe, mode, crash))
	}
	s.runAll(ctx, t, more)
	return *t, t.err
}

// runAll runs the schedules, s.c.parallel at once, into t; it returns,
// per schedule, the crash points of the run that resumed its first crash.
func (s *sweeper) runAll(ctx context.Context, t *tally, all []schedule) []int64 {
	resumes := make([]int64, len(all))
	var mu sync.Mutex
	sem := make(chan struct{}, s.c.parallel)
	var wg sync.WaitGroup
	for i, sc := range all {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out, resume, err := s.run(ctx, sc)
			n := s.pay.count(sc.intent)
			mu.Lock()
			defer mu.Unlock()
			t.schedules++
			resumes[i] = resume
			if err != nil {
				t.err = cmp(t.err, fmt.Errorf("schedule %v: %w", sc.crash, err))
				return
			}
			if n > t.max {
				t.max, t.worst = n, fmt.Sprintf("crashes at points %v", sc.crash)
			}
			switch out.Status {
			case "charged":
			case "person":
				t.person++
				if t.personDetail == "" {
					t.personDetail = fmt.Sprintf("%v: %s", sc.crash, out.Detail)
				}
			default:
				t.failures = append(t.failures, fmt.Sprintf("%v: %s %s", sc.crash, out.Status, out.Detail))
			}
		}()
	}
	wg.Wait()
	return resumes
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func (s *sweeper) schedule(rt runtime, exe, mode string, crash []string) schedule {
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	return schedule{rt: rt, exe: exe, mode: mode, intent: fmt.Sprintf("%s-%s-%d-%s", rt.Name, mode, n, s.id), crash: crash}
}

// run runs sc's invocations, one after another on the same directory,
// until one that was not killed answers other than pending. resume is
// the crash points the invocation after the first crash passed, when it
// was not killed.
func (s *sweeper) run(ctx context.Context, sc schedule) (out outcome, resume int64, err error) {
	dir, err := os.MkdirTemp(s.base, sc.intent+"-")
	if err != nil {
		return outcome{}, 0, err
	}
	defer os.RemoveAll(dir)
	crashes := append([]string(nil), sc.crash...)
	for runs := 0; runs < len(sc.crash)+maxRuns; runs++ {
		at := "0"
		if len(crashes) > 0 {
			at, crashes = crashes[0], crashes[1:]
		}
		out, killed, err := s.invoke(ctx, sc, dir, at)
		if err != nil {
			return outcome{}, 0, err
		}
		if runs == 1 && !killed {
			resume = out.Points
		}
		if killed || out.Status == "pending" {
			continue
		}
		return out, resume, nil
	}
	return outcome{Status: "pending", Detail: fmt.Sprintf("still pending after %d runs", maxRuns)}, resume, nil
}

// invoke runs one worker process; killed says it died by SIGKILL at its
// crash point.
func (s *sweeper) invoke(ctx context.Context, sc schedule, dir string, crash string) (outcome, bool, error) {
	cmd := exec.CommandContext(ctx, sc.exe, "worker", "-runtime", sc.rt.Name, "-mode", sc.mode,
		"-dir", dir, "-pay", s.pay.url, "-intent", sc.intent, "-crash", crash)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL && crash != "0" {
			return outcome{}, true, nil
		}
	}
	if err != nil {
		return outcome{}, false, fmt.Errorf("worker: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var out outcome
	if err := json.NewDecoder(io.LimitReader(&stdout, 1<<20)).Decode(&out); err != nil {
		return outcome{}, false, fmt.Errorf("worker's answer: %v (stdout %q, stderr %q)", err, stdout.String(), stderr.String())
	}
	return out, false, nil
}
