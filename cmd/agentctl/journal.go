package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	neturl "net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness/inspect"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/journal/postgres"
)

// openJournal opens the journal at location: a file path opens the bbolt
// store; a postgres:// or postgresql:// URL opens the PostgreSQL store (the
// URL's "schema" query parameter names the schema, default "agentonce"). A
// missing file, or a schema without a journal, is an error for every
// command, so a typo never creates an empty journal; only "import
// --create" creates one (see createJournal).
func openJournal(ctx context.Context, location string, readOnly bool) (journal.Store, error) {
	return openAt(ctx, location, &journal.Options{ReadOnly: readOnly}, 0, false)
}

// openAt opens the journal at location with opts: the PostgreSQL store,
// the Redis store or a bbolt file. Unless create is set, the journal must
// exist.
func openAt(ctx context.Context, location string, opts *journal.Options, lockTimeout time.Duration, create bool) (journal.Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch {
	case postgres.IsURL(location):
		return openPostgres(ctx, location, opts, create)
	case isRedisURL(location):
		return openRedis(ctx, location, opts, create)
	case !create:
		if err := checkBoltFile(location); err != nil {
			return nil, err
		}
	}
	return openBolt(location, &bolt.Options{Journal: *cmp.Or(opts, new(journal.Options)), LockTimeout: lockTimeout})
}

// checkBoltFile refuses a bbolt journal location that is missing, a
// directory or an empty file, with the exit code that says which.
func checkBoltFile(location string) error {
	fi, err := os.Stat(location)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &cliError{code: exitNoJournal,
			err:  fmt.Errorf("journal %s not found", location),
			hint: "check --journal or $AGENTONCE_JOURNAL (agentctl never creates a journal, except import --create)"}
	case err != nil:
		return err
	case fi.IsDir():
		return &cliError{code: exitUsage,
			err:  fmt.Errorf("journal %s is a directory", location),
			hint: "pass the journal file inside it"}
	case fi.Size() == 0:
		// bbolt would initialize an empty file as a new database; an
		// empty file is not a journal, and inspecting it must not make it
		// one.
		return &cliError{code: exitCorrupt,
			err:  fmt.Errorf("journal %s: %w: the file is empty", location, journal.ErrCorrupt),
			hint: "check --journal points at an agentonce journal"}
	}
	return nil
}

// openBolt returns a nil interface, not a nil *bolt.Store, on error.
func openBolt(path string, opts *bolt.Options) (journal.Store, error) {
	s, err := bolt.Open(path, opts)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// createJournal opens the bbolt journal at path, creating it if it does
// not exist, with the given namespace (zero: the stored one, or random).
func createJournal(ctx context.Context, location string, ns uuid.UUID, lockTimeout time.Duration, now func() time.Time) (journal.Store, error) {
	return openAt(ctx, location, &journal.Options{Namespace: ns, Now: now}, lockTimeout, true)
}

// open opens the journal named by the command's flags. A bbolt journal
// whose agent is running is locked; when the agent answers at the socket
// beside the file, the command gets a store that reads (and resolves)
// through it instead, so every command works as on a stopped agent's file.
func (j *journalFlags) open(ctx context.Context, e *env, readOnly bool) (journal.Store, error) {
	if err := j.resolve(e); err != nil {
		return nil, err
	}
	if !isRemote(j.location) {
		if err := checkBoltFile(j.location); err != nil {
			return nil, err
		}
		if s, err := dialAgent(ctx, j.location); s != nil || err != nil {
			return s, err
		}
	}
	// The store runs on the command's clock, so that expiry in stats, gc
	// and replay agrees with what the command prints.
	s, err := openAt(ctx, j.location, &journal.Options{ReadOnly: readOnly, Now: e.now}, j.lockTimeout, false)
	if errors.Is(err, journal.ErrInUse) && !isRemote(j.location) {
		return nil, &cliError{code: exitInUse, err: err,
			hint: "no agent answers at " + inspect.SocketPath(j.location) + " (its inspection is off, or it predates it): " +
				"stop the process using it (an agent holds it open), or retry with a longer --lock-timeout"}
	}
	return s, err
}

// dialAgent connects to the running agent of the bbolt journal at
// location. No agent there (no socket, or a stale one: connecting is
// refused) is (nil, nil): the file is not locked by a live agent, or is by
// one that serves nothing, and opening it says which.
func dialAgent(ctx context.Context, location string) (journal.Store, error) {
	c, err := inspect.Dial(ctx, inspect.SocketPath(location))
	if errors.Is(err, inspect.ErrNoAgent) {
		return nil, nil
	}
	if err != nil {
		return nil, agentError(location, err)
	}
	return c, nil
}

// agentError gives a failure to reach the running agent its exit code.
func agentError(location string, err error) error {
	switch {
	case errors.Is(err, inspect.ErrForeignUser):
		return &cliError{code: exitInUse, err: fmt.Errorf("journal %s is in use by an agent of another user: %w", location, err),
			hint: "run agentctl as the user the agent runs as"}
	case errors.Is(err, inspect.ErrVersion):
		return &cliError{code: exitCorrupt, err: fmt.Errorf("journal %s: %w", location, err)}
	case errors.Is(err, inspect.ErrBusy):
		return &cliError{code: exitInUse, err: fmt.Errorf("journal %s: %w", location, err),
			hint: "other clients hold all of the agent's inspection connections (agentctl tail counts one each); try again when one ends"}
	}
	return err
}

// liveWriters reports whether another process may be writing the journal
// while the command runs: PostgreSQL, or a bbolt journal whose running
// agent answers for it. Only then is a live lease a live owner's; a bbolt
// journal agentctl could open has no other writer.
func liveWriters(location string, s journal.Store) bool {
	_, served := s.(*inspect.Client)
	return served || isRemote(location)
}

// postgresTestClock stands in for the database server's clock in tests
// (postgres.Options.TestClock); nil, as in the program, means the server's
// clock decides.
var postgresTestClock func() time.Time

// openPostgres opens the PostgreSQL journal at location (its schema
// parameter names the journal); unless create is set, the journal must
// exist (openExisting).
func openPostgres(ctx context.Context, location string, opts *journal.Options, create bool) (journal.Store, error) {
	url, schema, err := splitSchema(location)
	if err != nil {
		return nil, err
	}
	open := func(o *journal.Options) (journal.Store, error) {
		s, err := postgres.Open(ctx, url, &postgres.Options{Journal: *cmp.Or(o, new(journal.Options)), Schema: schema, TestClock: postgresTestClock})
		if errors.Is(err, postgres.ErrNoJournal) {
			return nil, &cliError{code: exitNoJournal,
				err:  fmt.Errorf("no journal in PostgreSQL schema %q: %w", orDefault(schema, postgres.DefaultSchema), err),
				hint: "check the URL and its schema parameter (agentctl never creates a journal, except import --create)"}
		}
		if err != nil {
			return nil, unreachable(err)
		}
		return s, nil
	}
	return openExisting(open, opts, create)
}

// openExisting opens a server's journal with open and opts. A writable
// open would create a journal where there is none (a PostgreSQL schema,
// a Redis prefix), so unless create is set it is preceded by a read-only
// one, which fails with ErrNoJournal.
func openExisting(open func(*journal.Options) (journal.Store, error), opts *journal.Options, create bool) (journal.Store, error) {
	if !create && !opts.ReadOnly {
		ro := *opts
		ro.ReadOnly = true
		s, err := open(&ro)
		if err != nil {
			return nil, err
		}
		s.Close()
	}
	return open(opts)
}

// unreachable turns a failure to connect to the PostgreSQL server (no
// server, a wrong host or port, a name that does not resolve) into one
// line naming host and port, with exit code 9; anything else, an
// authentication failure from a server that answered included, is
// returned as it is.
func unreachable(err error) error {
	var ce *pgconn.ConnectError
	var pe *pgconn.PgError
	if !errors.As(err, &ce) || errors.As(err, &pe) || ce.Config == nil {
		return err
	}
	var dns *net.DNSError
	var op *net.OpError
	cause := "no connection"
	switch {
	case errors.As(err, &dns):
		cause = "cannot resolve " + dns.Name + ": " + dns.Err
	case errors.As(err, &op):
		cause = op.Err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		cause = "timed out"
	}
	addr := net.JoinHostPort(ce.Config.Host, strconv.Itoa(int(ce.Config.Port)))
	if strings.HasPrefix(ce.Config.Host, "/") {
		addr = ce.Config.Host + " (port " + strconv.Itoa(int(ce.Config.Port)) + ")"
	}
	return &cliError{code: exitUnreachable, err: fmt.Errorf("cannot reach PostgreSQL at %s: %s", addr, cause),
		hint: "check the URL's host and port, and that the server is running (pg_isready -h HOST -p PORT)"}
}

// splitSchema removes the "schema" query parameter from a PostgreSQL URL.
func splitSchema(raw string) (string, string, error) {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "", "", usageErrorf("journal URL: %v", redact(err))
	}
	q := u.Query()
	schema := q.Get("schema")
	q.Del("schema")
	u.RawQuery = q.Encode()
	return u.String(), schema, nil
}

// redact keeps a password in a URL out of an error message.
func redact(err error) error {
	var ue *neturl.Error
	if errors.As(err, &ue) {
		return errors.New("cannot parse the URL")
	}
	return err
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
