package pgtest

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// RequirePairEnv, when set (.ci/run sets it), makes StartPair fail a test
// instead of skipping it when PostgreSQL's server binaries are missing.
const RequirePairEnv = "AGENTONCE_REQUIRE_PG_STANDBY"

// standbyName is the standby's application_name, the name
// synchronous_standby_names gives it.
const standbyName = "standby1"

// Pair is a PostgreSQL primary and a streaming standby of it, both
// started from Debian's server binaries on loopback ports for one test and
// removed when it ends.
type Pair struct {
	// URL names both servers, primary first, with
	// target_session_attrs=read-write: a client that loses the primary
	// reconnects through it to whichever server takes writes.
	URL string
	// PrimaryURL and StandbyURL name one server each.
	PrimaryURL, StandbyURL string

	tb               testing.TB
	bin, dir         string
	cred             *syscall.Credential // the postgres user's, when run as root
	primary, standby node
}

// node is one server: its data directory and port.
type node struct {
	data string
	port int
}

// StartPair starts a primary and a standby streaming from it. With sync
// the standby is synchronous (synchronous_standby_names names it, and
// synchronous_commit keeps its default, on): a commit returns once the
// standby has flushed it. Without, it is asynchronous: the primary never
// waits for it. It returns once the standby streams.
//
// It skips the test when the server binaries
// (/usr/lib/postgresql/*/bin) are missing, unless RequirePairEnv is set.
// Run as root, the servers run as the postgres user.
func StartPair(tb testing.TB, sync bool) *Pair {
	tb.Helper()
	p := &Pair{tb: tb, bin: serverBin()}
	if p.bin == "" {
		msg := "PostgreSQL's server binaries (initdb, pg_ctl, pg_basebackup under /usr/lib/postgresql/*/bin) are missing: " +
			"the failover tests start a primary and a standby of their own (apt-get install postgresql)"
		if os.Getenv(RequirePairEnv) != "" {
			tb.Fatal(msg + ", and " + RequirePairEnv + " is set")
		}
		tb.Skip(msg + "; " + RequirePairEnv + "=1 makes this a failure")
	}
	var err error
	if p.dir, err = os.MkdirTemp("", "agentonce-pgpair-"); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.remove)
	if os.Geteuid() == 0 {
		p.cred = postgresUser(tb)
		if err := os.Chown(p.dir, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			tb.Fatal(err)
		}
	}
	p.primary = node{data: filepath.Join(p.dir, "primary")}
	p.standby = node{data: filepath.Join(p.dir, "standby")}
	p.run("initdb", "-D", p.primary.data, "-U", "postgres", "-A", "trust", "--no-sync")
	conf := p.serverConf() + "wal_level = replica\nmax_wal_senders = 4\n"
	if sync {
		conf += "synchronous_standby_names = '" + standbyName + "'\n"
	}
	p.appendConf(p.primary, "postgresql.conf", conf)
	p.start(&p.primary)
	p.run("pg_basebackup", "-D", p.standby.data, "-h", "127.0.0.1", "-p", strconv.Itoa(p.primary.port),
		"-U", "postgres", "-X", "stream", "-c", "fast", "--no-sync")
	// Promoted, the standby has no standby of its own to wait for.
	p.appendConf(p.standby, "postgresql.auto.conf", p.serverConf()+fmt.Sprintf(
		"primary_conninfo = 'host=127.0.0.1 port=%d user=postgres application_name=%s'\nsynchronous_standby_names = ''\n",
		p.primary.port, standbyName))
	p.appendConf(p.standby, "standby.signal", "")
	p.start(&p.standby)
	p.PrimaryURL, p.StandbyURL = nodeURL(p.primary), nodeURL(p.standby)
	p.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write",
		p.primary.port, p.standby.port)
	p.waitStreaming(sync)
	return p
}

// KillPrimary ends the primary's postmaster with SIGKILL: no shutdown, no
// last WAL sent. Its backends exit as they notice, and nothing restarts
// it.
func (p *Pair) KillPrimary() {
	p.tb.Helper()
	b, err := os.ReadFile(filepath.Join(p.primary.data, "postmaster.pid"))
	if err != nil {
		p.tb.Fatalf("reading the primary's postmaster.pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		p.tb.Fatalf("the primary's postmaster.pid: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		p.tb.Fatalf("killing the primary (pid %d): %v", pid, err)
	}
}

// Promote makes the standby the primary and returns once it takes
// writes.
func (p *Pair) Promote() {
	p.tb.Helper()
	p.run("pg_ctl", "promote", "-w", "-t", "120", "-D", p.standby.data)
}

// FailoverCommand is a shell command that does what KillPrimary and then
// Promote do, for a program that takes one (agentcheck -failover).
func (p *Pair) FailoverCommand() string {
	promote := fmt.Sprintf("%s promote -w -t 120 -D %s", filepath.Join(p.bin, "pg_ctl"), p.standby.data)
	if p.cred != nil {
		promote = "su postgres -s /bin/sh -c '" + promote + "'"
	}
	return fmt.Sprintf("kill -KILL $(head -n 1 %s) && %s", filepath.Join(p.primary.data, "postmaster.pid"), promote)
}

// StopStandby shuts the standby down cleanly: an asynchronous standby
// falls behind while it is down (the primary does not wait), a
// synchronous one holds every commit back.
func (p *Pair) StopStandby() {
	p.tb.Helper()
	p.run("pg_ctl", "stop", "-w", "-m", "fast", "-D", p.standby.data)
}

// StartStandby starts the standby again; it streams from the primary if
// the primary is there.
func (p *Pair) StartStandby() {
	p.tb.Helper()
	p.start(&p.standby)
}

// CaughtUp waits until the standby has replayed everything the primary
// has written so far.
func (p *Pair) CaughtUp() {
	p.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var lsn string
	p.query(ctx, p.PrimaryURL, `SELECT pg_current_wal_lsn()::text`, &lsn)
	for {
		var done bool
		p.query(ctx, p.StandbyURL, `SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn`, &done, lsn)
		if done {
			return
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			p.tb.Fatalf("the standby did not replay up to %s: %v", lsn, err)
		}
	}
}

// waitStreaming waits until the primary sees the standby streaming, and
// synchronous when sync.
func (p *Pair) waitStreaming(sync bool) {
	p.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		var n int
		p.query(ctx, p.PrimaryURL, `SELECT count(*) FROM pg_stat_replication
			WHERE application_name = $1 AND state = 'streaming' AND (sync_state = 'sync') = $2`, &n, standbyName, sync)
		if n == 1 {
			return
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			p.tb.Fatalf("the standby is not streaming (sync %v): %v", sync, err)
		}
	}
}

// query runs sql on the server at url and scans its one row into dst.
func (p *Pair) query(ctx context.Context, url, sql string, dst any, args ...any) {
	p.tb.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		p.tb.Fatalf("connecting to %s: %v", url, err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(ctx, sql, args...).Scan(dst); err != nil {
		p.tb.Fatalf("%s on %s: %v", sql, url, err)
	}
}

// serverConf is the settings of both servers: loopback only, their
// sockets in the pair's directory. Each one's port is given at its start.
func (p *Pair) serverConf() string {
	return fmt.Sprintf("\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nmax_connections = 100\n", p.dir)
}

func (p *Pair) appendConf(n node, file, text string) {
	p.tb.Helper()
	path := filepath.Join(n.data, file)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		_, err = f.WriteString(text)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil && p.cred != nil {
		err = os.Chown(path, int(p.cred.Uid), int(p.cred.Gid))
	}
	if err != nil {
		p.tb.Fatalf("writing %s: %v", path, err)
	}
}

// start starts n's server on its port; a server's first start picks a
// free port, and another if a process took that one meanwhile.
func (p *Pair) start(n *node) {
	p.tb.Helper()
	for try := 0; ; try++ {
		port := n.port
		if port == 0 {
			port = freePort(p.tb)
		}
		out, err := p.command("pg_ctl", "start", "-w", "-t", "120", "-D", n.data, "-l", n.data+".log",
			"-o", "-p "+strconv.Itoa(port)).CombinedOutput()
		if err == nil {
			n.port = port
			return
		}
		if n.port != 0 || try == 4 {
			log, _ := os.ReadFile(n.data + ".log")
			p.tb.Fatalf("pg_ctl start %s on port %d: %v\n%s\n%s", n.data, port, err, out, log)
		}
	}
}

// run runs one of the server's programs as the servers' user, failing the
// test with its output if it fails.
func (p *Pair) run(prog string, args ...string) {
	p.tb.Helper()
	if out, err := p.command(prog, args...).CombinedOutput(); err != nil {
		p.tb.Fatalf("%s %s: %v\n%s", prog, strings.Join(args, " "), err, out)
	}
}

func (p *Pair) command(prog string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.bin, prog), args...)
	cmd.Dir = p.dir
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
		cmd.Env = append(os.Environ(), "HOME="+p.dir, "USER=postgres")
	}
	return cmd
}

// remove stops both servers at once and removes their directory.
func (p *Pair) remove() {
	for _, n := range []node{p.primary, p.standby} {
		if n.data != "" {
			_ = p.command("pg_ctl", "stop", "-m", "immediate", "-D", n.data).Run()
		}
	}
	_ = os.RemoveAll(p.dir)
}

// serverBin is the newest /usr/lib/postgresql/*/bin that holds pg_ctl,
// initdb and pg_basebackup, or "".
func serverBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if exists(d, "pg_ctl") && exists(d, "initdb") && exists(d, "pg_basebackup") {
			return d
		}
	}
	return ""
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func exists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

// postgresUser is the credential of the postgres user, which Debian's
// package creates: PostgreSQL refuses to run as root.
func postgresUser(tb testing.TB) *syscall.Credential {
	tb.Helper()
	u, err := user.Lookup("postgres")
	if err != nil {
		tb.Fatalf("running as root, the servers need the postgres user: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// freePort is a loopback port nobody listens on now, below Linux's
// ephemeral range (32768 up), which clients' connections take theirs from.
func freePort(tb testing.TB) int {
	tb.Helper()
	for try := 0; ; try++ {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+mrand.IntN(12000)))
		if err == nil {
			defer l.Close()
			return l.Addr().(*net.TCPAddr).Port
		}
		if try == 100 {
			tb.Fatalf("no free loopback port: %v", err)
		}
	}
}

func nodeURL(n node) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", n.port)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
