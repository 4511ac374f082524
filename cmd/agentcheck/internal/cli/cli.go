// Package cli is agentcheck's command line: its flags, its output and its
// exit codes, as Run. cmd/agentcheck calls it; so does cmd/agentcheck/redis,
// the same command with the Redis journal linked in.
package cli

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentonce/agentonce/cmd/agentcheck/internal/check"
	"github.com/agentonce/agentonce/internal/suggest"
)

// Exit codes.
const (
	exitOK        = 0
	exitViolation = 1
	exitUsage     = 2
	exitCannotRun = 3
)

// DropRedis removes a Redis journal's keys (location names its prefix). A
// program that links the Redis journal in (cmd/agentcheck/redis) sets it;
// while it is nil, -store redis and -server-store redis are refused.
var DropRedis func(ctx context.Context, location string) error

// parseFlags's errors: -h or -help was asked for; a usage error, already
// told on stderr.
var (
	errHelp  = errors.New("help requested")
	errUsage = errors.New("usage error")
)

// helpHint ends a usage error's message.
const helpHint = "run 'agentcheck -help' for the flags and exit codes"

// usage is what -help prints: what the tool does, its flags and its exit
// codes. Keep it in step with doc.go and README.md.
const usage = `agentcheck: a seeded fault checker for agentonce.

From a seed it generates a schedule of intents and faults, runs it against
real agent processes, a real journal (bbolt, PostgreSQL or Redis) and a loopback
downstream that counts effects, and checks every answer the agents got
against the history of what happened. The seed is printed first; the same
seed gives the same schedule.

Usage:
  agentcheck [flags]

Flags:
  -seed N          schedule seed (default random, printed)
  -duration D      how long issues and faults go on, per store (default 20s)
  -store S         the agents' journal: bolt, postgres, redis (a key
                   prefix of its own on -redis; needs cmd/agentcheck/redis)
                   or both (bolt and postgres) (default bolt)
  -pg URL          PostgreSQL server URL (default $AGENTONCE_PG_URL);
                   required with -store postgres or both
  -workers N       agent processes at once on PostgreSQL or Redis (default 3)
  -intents N       intents per store (default 10 per second of -duration)
  -lease D         the workers' lease, harness Options.LeaseTTL (default 500ms)
  -skew=false      do not run a PostgreSQL worker with its clock 90s ahead
  -kill=false      do not SIGKILL workers or terminate PostgreSQL backends
  -failover CMD    with -store postgres or redis, run the shell command CMD
                   once, halfway: on PostgreSQL it must kill the primary and
                   promote a standby that -pg names too
                   (postgres://h1,h2/...?target_session_attrs=read-write);
                   on a Redis cluster it kills a master, whose replica the
                   cluster promotes
  -scenarios LIST  comma-separated scenarios to run (default all)
  -downstream M    builtin (default): the downstream keeps the
                   Idempotency-Key contract itself; middleware: package
                   idempotency on a real journal does, between the fault
                   script and the handler that makes the effect
  -server-store S  the middleware's journal: bolt (default), postgres
                   (a schema of its own on -pg) or redis (a key prefix of
                   its own on -redis; needs cmd/agentcheck/redis)
  -redis URL       Redis server URL (default $AGENTONCE_REDIS_URL):
                   redis://host:port/db, or a cluster's
                   redis+cluster://host:port/?addr=host2:port2&replicas=1
  -handler-5xx     with -downstream middleware, a "fail-after" step is the
                   handler's (it commits, then answers the 5xx through the
                   middleware), not a gateway's after the middleware
  -store-5xx       the middleware stores 5xx answers (StoreServerErrors)
  -kill-server     with -downstream middleware, run the server in a process
                   of its own and SIGKILL it every 2 to 5 s
  -reconcile       with -downstream middleware, the middleware asks the
                   application's own record of effects by key what became
                   of a request whose server died (Options.Reconcile); the
                   summary counts the unknowns it settled
  -history FILE    merged history file, JSON Lines (default in the temp dir)
  -json            print the result as one JSON object
  -v               print progress, and the history of every violation

Exit codes:
  0  no violation
  1  at least one violation, or a run whose workers failed
  2  usage: a bad flag or value, or -store postgres, redis (or
     -server-store postgres, redis) without a URL
  3  the check could not run (PostgreSQL unreachable, no temporary
     directory, its own binary not found)

Example:
  agentcheck -seed 1 -store bolt
  AGENTONCE_PG_URL=postgres://... agentcheck -seed 1 -store both
  go run ./cmd/agentcheck/redis -seed 6 -store redis -redis 'redis+cluster://127.0.0.1:7000/?replicas=1'
  agentcheck -seed 1 -downstream middleware -server-store bolt
`

// options are the flags of a check.
type options struct {
	seed      int64
	seedSet   bool
	duration  time.Duration
	store     string
	pg        string
	workers   int
	intents   int
	lease     time.Duration
	skew      bool
	kill      bool
	scenarios []string
	history   string
	corrupt   int
	json      bool
	verbose   bool
	// The downstream's mode, the middleware's store and Redis's URL.
	downstream  string
	serverStore string
	redis       string
	server      check.ServerOptions
	killServer  bool
	failover    string
}

// Run runs agentcheck with args (without the program's name), and returns
// its exit code. "worker" as the first argument is one agent process of a
// check, started by the check itself.
func Run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "worker" {
		return runWorker(args[1:], stderr)
	}
	if len(args) > 0 && args[0] == "server" {
		return runServer(args[1:], stderr)
	}
	o, err := parseFlags(args, stderr)
	if errors.Is(err, errHelp) {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	return runCheck(o, stdout, stderr)
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("agentcheck", flag.ContinueOnError)
	// The flag package's own messages and usage are silenced: Run prints
	// usage for -help, parseError the error with a suggestion.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.Int64Var(&o.seed, "seed", 0, "schedule seed (default random, printed)")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "how long issues and faults go on, per store")
	fs.StringVar(&o.store, "store", "bolt", "journal: bolt, postgres, redis or both")
	fs.StringVar(&o.pg, "pg", os.Getenv("AGENTONCE_PG_URL"), "PostgreSQL server URL (default $AGENTONCE_PG_URL)")
	fs.IntVar(&o.workers, "workers", 3, "agent processes at once on PostgreSQL or Redis")
	fs.IntVar(&o.intents, "intents", 0, "intents per store (default 10 per second of -duration)")
	fs.DurationVar(&o.lease, "lease", 500*time.Millisecond, "the workers' lease (harness Options.LeaseTTL); tool durations are drawn around it")
	fs.BoolVar(&o.skew, "skew", true, "run one PostgreSQL worker with its journal clock 90s ahead")
	fs.BoolVar(&o.kill, "kill", true, "kill workers with SIGKILL (and terminate PostgreSQL backends) at random moments")
	scenarios := fs.String("scenarios", "", "comma-separated scenarios to run (default all: "+strings.Join(check.Scenarios(), ", ")+")")
	fs.IntVar(&o.corrupt, "corrupt", 0, "bbolt: before the final pass, alter the stored output of this many intents in the journal file (the harness must refuse them)")
	fs.StringVar(&o.history, "history", "", "merged history file (JSON Lines); with -store both, the store's name is added")
	fs.BoolVar(&o.json, "json", false, "print the result as one JSON object")
	fs.BoolVar(&o.verbose, "v", false, "print progress, and the history of every violation")
	fs.StringVar(&o.downstream, "downstream", check.ModeBuiltin, "builtin, or middleware: package idempotency on a real journal keeps the Idempotency-Key contract")
	fs.StringVar(&o.serverStore, "server-store", "bolt", "with -downstream middleware, the middleware's journal: bolt, postgres or redis")
	fs.BoolVar(&o.server.HandlerFailAfter, "handler-5xx", false, "with -downstream middleware, a fail-after step is the handler's: it commits, then answers the 5xx through the middleware")
	fs.BoolVar(&o.server.StoreServerErrors, "store-5xx", false, "with -downstream middleware, the middleware stores 5xx answers (idempotency.Options.StoreServerErrors)")
	fs.BoolVar(&o.server.Reconcile, "reconcile", false, "with -downstream middleware, the middleware asks the application's record of effects by key what became of a request whose server died (idempotency.Options.Reconcile)")
	fs.BoolVar(&o.killServer, "kill-server", false, "with -downstream middleware, run the server in a process of its own and kill it with SIGKILL at random moments")
	fs.StringVar(&o.failover, "failover", "", "with -store postgres or redis, a shell command run once halfway that kills the primary (promoting a standby -pg names too) or a cluster's master")
	fs.StringVar(&o.redis, "redis", os.Getenv("AGENTONCE_REDIS_URL"), "Redis server or cluster URL (redis:// or redis+cluster://) for -store redis and -server-store redis (default $AGENTONCE_REDIS_URL)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, errHelp
		}
		fmt.Fprintln(stderr, parseError(fs, err))
		return o, errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentcheck: unexpected argument %q; %s\n", fs.Arg(0), helpHint)
		return o, errUsage
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "seed" {
			o.seedSet = true
		}
	})
	if *scenarios != "" {
		for _, name := range strings.Split(*scenarios, ",") {
			name = strings.TrimSpace(name)
			if !slices.Contains(check.Scenarios(), name) {
				fmt.Fprintf(stderr, "agentcheck: -scenarios: unknown scenario %q (want %s)\n", name, strings.Join(check.Scenarios(), ", "))
				return o, errUsage
			}
			o.scenarios = append(o.scenarios, name)
		}
	}
	return o, o.validate(stderr)
}

// validate tells on stderr the first value of o that cannot run, and
// returns errUsage for it.
func (o *options) validate(stderr io.Writer) error {
	switch o.store {
	case "bolt", "postgres", "both":
	case "redis":
		if msg := o.redisMissing("-store redis"); msg != "" {
			fmt.Fprintln(stderr, msg)
			return errUsage
		}
	default:
		fmt.Fprintf(stderr, "agentcheck: -store %q: want bolt, postgres, redis or both\n", o.store)
		return errUsage
	}
	if o.duration <= 0 {
		fmt.Fprintln(stderr, "agentcheck: -duration must be positive")
		return errUsage
	}
	if o.lease < 100*time.Millisecond {
		fmt.Fprintln(stderr, "agentcheck: -lease must be at least 100ms")
		return errUsage
	}
	if (o.store == "postgres" || o.store == "both") && o.pg == "" {
		fmt.Fprintf(stderr, "agentcheck: -store %s needs -pg URL or AGENTONCE_PG_URL\n", o.store)
		return errUsage
	}
	if o.failover != "" && o.store != "postgres" && o.store != "redis" {
		fmt.Fprintln(stderr, "agentcheck: -failover needs -store postgres (and -pg naming the primary and the standby) or -store redis (and -redis naming a cluster)")
		return errUsage
	}
	if o.downstream != check.ModeBuiltin && o.downstream != check.ModeMiddleware {
		fmt.Fprintf(stderr, "agentcheck: -downstream %q: want %s or %s\n", o.downstream, check.ModeBuiltin, check.ModeMiddleware)
		return errUsage
	}
	if o.server.Reconcile && o.downstream != check.ModeMiddleware {
		fmt.Fprintln(stderr, "agentcheck: -reconcile needs -downstream middleware (it is the middleware's Options.Reconcile)")
		return errUsage
	}
	if o.killServer && o.downstream != check.ModeMiddleware {
		fmt.Fprintln(stderr, "agentcheck: -kill-server needs -downstream middleware (the builtin downstream runs in the checker's process)")
		return errUsage
	}
	switch o.serverStore {
	case "bolt":
	case "postgres":
		if o.downstream == check.ModeMiddleware && o.pg == "" {
			fmt.Fprintln(stderr, "agentcheck: -server-store postgres needs -pg URL or AGENTONCE_PG_URL")
			return errUsage
		}
	case "redis":
		if msg := o.redisMissing("-server-store redis"); o.downstream == check.ModeMiddleware && msg != "" {
			fmt.Fprintln(stderr, msg)
			return errUsage
		}
	default:
		fmt.Fprintf(stderr, "agentcheck: -server-store %q: want bolt, postgres or redis\n", o.serverStore)
		return errUsage
	}
	return nil
}

// redisMissing says why flag (-store redis or -server-store redis)
// cannot run, or "".
func (o *options) redisMissing(flag string) string {
	switch {
	case DropRedis == nil:
		return "agentcheck: " + flag + ": this agentcheck has no Redis journal linked in; run the one that has: go run ./cmd/agentcheck/redis " + flag
	case o.redis == "":
		return "agentcheck: " + flag + " needs -redis URL or AGENTONCE_REDIS_URL"
	}
	return ""
}

// parseError is the message for an error of fs.Parse: for a flag fs does
// not define, with the flag it most likely meant. Package flag has no
// typed error for it, so its message, unchanged since Go 1, is read.
func parseError(fs *flag.FlagSet, err error) string {
	if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if sug := suggest.Closest(name, names); sug != "" {
			return fmt.Sprintf("agentcheck: unknown flag -%s; did you mean -%s? (%s)", name, sug, helpHint)
		}
		return fmt.Sprintf("agentcheck: unknown flag -%s; %s", name, helpHint)
	}
	return fmt.Sprintf("agentcheck: %v; %s", err, helpHint)
}

func runCheck(o options, stdout, stderr io.Writer) int {
	if !o.seedSet {
		var b [8]byte
		_, _ = rand.Read(b[:])
		o.seed = int64(binary.LittleEndian.Uint64(b[:]) >> 1)
	}
	fmt.Fprintf(stderr, "agentcheck: seed %d\n", o.seed)
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "agentcheck: finding my own binary to run workers: %v\n", err)
		return exitCannotRun
	}
	stores := []string{o.store}
	if o.store == "both" {
		stores = []string{"bolt", "postgres"}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var reports []*check.Report
	for _, st := range stores {
		ro := check.Options{Seed: o.seed, Store: st, PGURL: o.pg, Duration: o.duration,
			Workers: o.workers, Intents: o.intents, Lease: o.lease, NoSkew: !o.skew, NoKill: !o.kill, Scenarios: o.scenarios, Exe: exe, History: o.history, Corrupt: o.corrupt,
			Downstream: o.downstream, ServerStore: o.serverStore, RedisURL: o.redis, DropRedis: DropRedis, Server: o.server, KillServer: o.killServer, Failover: o.failover}
		if o.history != "" && len(stores) > 1 {
			ext := filepath.Ext(o.history)
			ro.History = strings.TrimSuffix(o.history, ext) + "-" + st + ext
		}
		if o.verbose {
			ro.Progress = stderr
		}
		rep, err := check.Run(ctx, ro)
		if err != nil {
			fmt.Fprintf(stderr, "agentcheck: %s: %v\n", st, err)
			return exitCannotRun
		}
		reports = append(reports, rep)
	}
	failed := false
	for _, r := range reports {
		failed = failed || r.Failed()
	}
	if o.json {
		n, e, v := check.Totals(reports)
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(check.JSONSummary{Seed: o.seed, Intents: n, Effects: e, Violations: v, Reports: reports})
	} else {
		for _, r := range reports {
			r.WriteText(stdout, o.verbose)
		}
		fmt.Fprintln(stdout, check.SummaryLine(reports))
	}
	if failed {
		return exitViolation
	}
	return exitOK
}
