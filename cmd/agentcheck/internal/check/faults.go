package check

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// every calls fault every lo to hi milliseconds (a new draw each time)
// until the run's end, until stop is closed, or until fault returns false:
// the one loop of the run's faults.
func (r *runner) every(lo, hi int, stop <-chan struct{}, fault func() bool) {
	for {
		wait := r.randMS(lo, hi)
		if time.Now().Add(wait).After(r.end) {
			return
		}
		select {
		case <-stop:
			return
		case <-time.After(wait):
		}
		if !fault() {
			return
		}
	}
}

// sigkill kills the process proc with SIGKILL and records it under
// subject in the runner's history.
func (r *runner) sigkill(cmd *exec.Cmd, subject, proc string) {
	if err := cmd.Process.Signal(syscall.SIGKILL); err == nil {
		r.log.Add(Event{Ev: EvProc, Subject: subject, Note: fmt.Sprintf("kill %s pid %d", proc, cmd.Process.Pid)})
		r.say("kill %s", proc)
	}
}

// kill sends SIGKILL to a random worker every 1.5 to 4 seconds until the
// run's end.
func (r *runner) kill(stop <-chan struct{}) {
	r.every(1500, 4000, stop, func() bool {
		slot := r.randInt(0, r.plan.Workers-1)
		r.mu.Lock()
		p := r.procs[slot]
		r.mu.Unlock()
		if p != nil {
			r.sigkill(p.cmd, p.proc, p.proc)
		}
		return true
	})
}

func (r *runner) killAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.procs {
		_ = p.cmd.Process.Kill()
	}
}

// terminate ends a random backend of the run's workers every 1 to 3
// seconds until the run's end. Across a failover it connects again to
// the server that took over.
func (r *runner) terminate(ctx context.Context, stop <-chan struct{}) {
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	r.every(1000, 3000, stop, func() bool {
		var err error
		if conn == nil || conn.IsClosed() {
			conn, err = pgx.Connect(ctx, r.o.PGURL)
		}
		var bs []backend
		if err == nil {
			bs, err = r.backends(ctx, conn)
		}
		if err != nil {
			if r.o.Failover != "" {
				return true // the primary may be gone: the next tick finds the new one
			}
			r.problem("terminator: %v", err)
			return false
		}
		if len(bs) == 0 {
			return true
		}
		b := bs[r.randInt(0, len(bs)-1)]
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, b.pid).Scan(&ok); err == nil && ok {
			_, proc, _ := strings.Cut(b.name, "/")
			r.log.Add(Event{Ev: EvFault, Subject: proc, Note: fmt.Sprintf("pg_terminate_backend %d (%s)", b.pid, b.name)})
		}
		return true
	})
}

// backend is a server process of one of the run's workers.
type backend struct {
	pid  int32
	name string
}

// backends lists the server processes of the run's workers.
func (r *runner) backends(ctx context.Context, conn *pgx.Conn) ([]backend, error) {
	rows, err := conn.Query(ctx, `SELECT pid, application_name FROM pg_stat_activity
		WHERE starts_with(application_name, $1) ORDER BY pid`, r.schema+"/")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (backend, error) {
		var b backend
		return b, row.Scan(&b.pid, &b.name)
	})
}

// failoverNote begins the note of a failover's fault event, which strikes
// every process.
const failoverNote = "failover: "

// failover runs Options.Failover once, halfway through the run, and
// records it as a fault.
func (r *runner) failover(stop <-chan struct{}) {
	select {
	case <-stop:
		return
	case <-time.After(time.Until(r.end.Add(-r.o.Duration / 2))):
	}
	r.log.Add(Event{Ev: EvFault, Note: failoverNote + r.o.Failover})
	r.say("failover")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "sh", "-c", r.o.Failover).CombinedOutput(); err != nil {
		r.problem("failover command %q: %v\n%s", r.o.Failover, err, out)
	}
}

// corrupt changes, in the bbolt file at path, the first effect's number in
// the stored output of up to n intents ("effect":1 becomes "effect":7,
// wherever the file holds it), and records each as a fault. No process has
// the file open.
func (r *runner) corrupt(path string, n int) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	marker := []byte(`"effect":1,"intent":"`)
	done := map[string]bool{}
	for off := 0; ; {
		i := bytes.Index(b[off:], marker)
		if i < 0 {
			break
		}
		at := off + i
		off = at + len(marker)
		end := bytes.IndexByte(b[off:], '"')
		if end < 0 {
			break
		}
		intent := string(b[off : off+end])
		if !done[intent] && len(done) >= n {
			continue
		}
		done[intent] = true
		b[at+len(`"effect":`)] = '7'
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return err
	}
	for _, intent := range slices.Sorted(maps.Keys(done)) {
		r.log.Add(Event{Ev: EvFault, Intent: intent, Subject: "final", Note: "corrupted the stored output of the intent in the journal file"})
	}
	return nil
}
