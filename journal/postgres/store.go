package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentonce/agentonce/journal"
)

// Options configures Open. A nil *Options means defaults; each field's zero
// value is its default.
type Options struct {
	// Journal holds the store-independent options: the namespace, read-only
	// mode and the clock. Nil means defaults. LockTimeout, MaxBatchSize and
	// MaxBatchDelay are bbolt's and are ignored here.
	Journal *journal.Options

	// Schema is the PostgreSQL schema that holds the journal's tables. Empty
	// means "agentonce". Journals in different schemas of one database are
	// independent (their own namespace, records and migrations).
	Schema string

	// MaxConns caps the connection pool. Zero means the URL's
	// pool_max_conns if it has one, else pgxpool's default (the greater of
	// 4 and the number of CPUs).
	MaxConns int32
}

// DefaultSchema is the schema used when Options.Schema is empty.
const DefaultSchema = "agentonce"

// IsURL reports whether a journal location names a PostgreSQL database (a
// postgres:// or postgresql:// URL) rather than a bbolt file path, so that
// a program taking one --journal flag can pick the store.
func IsURL(location string) bool {
	l := strings.ToLower(location)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// Store is a journal.Store on PostgreSQL. It is safe for concurrent use by
// many goroutines, and many processes on many hosts may open the same
// schema at once.
type Store struct {
	pool     *pgxpool.Pool
	ns       uuid.UUID
	schema   string
	readOnly bool
	now      func() time.Time
	closed   atomic.Bool
	sql      statements
}

var _ journal.Store = (*Store)(nil)

// Open connects to the database at url (a PostgreSQL URL or key=value
// connection string; a "schema" parameter in it names the schema when
// Options.Schema does not), creates the journal's schema and tables or migrates
// them to SchemaVersion, and returns the store. Several processes may Open
// the same schema at once: migrations run once, under an advisory lock.
//
// A read-only Open creates nothing: it fails with ErrNoJournal when the
// schema holds no journal, and every session it opens is read-only on the
// server too.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	jo := opts.Journal
	if jo == nil {
		jo = &journal.Options{}
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgconn's parse errors redact passwords.
		return nil, fmt.Errorf("postgres journal: parsing the connection URL: %w", err)
	}
	// A "schema" parameter in the URL (not a PostgreSQL setting) names the
	// schema, so that one journal location string says everything.
	schema := opts.Schema
	if s, ok := cfg.ConnConfig.RuntimeParams["schema"]; ok {
		delete(cfg.ConnConfig.RuntimeParams, "schema")
		if schema != "" && schema != s {
			return nil, fmt.Errorf("postgres journal: the URL names schema %q and Options.Schema %q", s, schema)
		}
		schema = s
	}
	if schema == "" {
		schema = DefaultSchema
	}
	if err := checkText("schema", schema); err != nil {
		return nil, fmt.Errorf("postgres journal: %w", err)
	}
	if len(schema) > 63 {
		// PostgreSQL would silently truncate it, and two long names could
		// meet in one schema.
		return nil, fmt.Errorf("postgres journal: schema %q is %d bytes; PostgreSQL names hold at most 63", schema, len(schema))
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if jo.ReadOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	cfg.ConnConfig.RuntimeParams[sealSetting] = "on" // the trigger seals this store's writes
	s := &Store{schema: schema, readOnly: jo.ReadOnly, now: jo.Now, sql: buildStatements(pgx.Identifier{schema}.Sanitize())}
	if s.now == nil {
		s.now = time.Now
	}
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres journal schema %q: %w", schema, err)
	}
	if jo.ReadOnly {
		err = s.openReadOnly(ctx, jo.Namespace)
	} else {
		s.ns, err = migrate(ctx, s.pool, schema, jo.Namespace, s.now().UnixNano())
	}
	if err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("postgres journal schema %q: %w", schema, err)
	}
	return s, nil
}

func (s *Store) openReadOnly(ctx context.Context, want uuid.UUID) error {
	version, ns, found, err := readMeta(ctx, s.pool, s.schema)
	switch {
	case err != nil:
		return err
	case !found:
		return ErrNoJournal
	case version > SchemaVersion:
		return fmt.Errorf("schema version %d, this package supports up to %d: %w", version, SchemaVersion, journal.ErrNewerVersion)
	case version < SchemaVersion:
		return fmt.Errorf("schema version %d is older than %d: open it read-write once to migrate", version, SchemaVersion)
	}
	s.ns = ns
	return checkNamespace(ns, want, nil)
}

// Pool returns the store's connection pool, for a tool that keeps its own
// data in the same database. Closing the store closes it.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Schema returns the PostgreSQL schema that holds the journal's tables.
func (s *Store) Schema() string { return s.schema }

// Namespace returns the journal's namespace, shared by every process that
// opens the schema.
func (s *Store) Namespace() uuid.UUID { return s.ns }

// Close closes the connection pool. Calls after Close, Close included,
// return journal.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return journal.ErrClosed
	}
	s.pool.Close()
	return nil
}

// check refuses a call on a closed store or with a finished context.
func (s *Store) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return journal.ErrClosed
	}
	return nil
}

// checkWrite is check for a call that always writes.
func (s *Store) checkWrite(ctx context.Context, op string, key uuid.UUID) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if s.readOnly {
		return fmt.Errorf("%w: %s %s", journal.ErrReadOnly, op, key)
	}
	return nil
}

// fail wraps err from op on key (uuid.Nil for calls about no one key). A
// write whose commit is in doubt gives ErrOutcomeUncertain wrapping err; a
// failure because the store was closed meanwhile gives journal.ErrClosed.
func (s *Store) fail(op string, key uuid.UUID, write bool, err error) error {
	what := op
	if key != uuid.Nil {
		what += " " + key.String()
	}
	if write && uncertain(err) {
		return fmt.Errorf("postgres journal: %s: %w: %w", what, ErrOutcomeUncertain, err)
	}
	if s.closed.Load() {
		return journal.ErrClosed
	}
	if isSentinel(err) {
		return err
	}
	return fmt.Errorf("postgres journal: %s: %w", what, err)
}

func isSentinel(err error) bool {
	for _, e := range []error{journal.ErrNotFound, journal.ErrFenced, journal.ErrNotResolvable,
		journal.ErrExists, journal.ErrReadOnly, journal.ErrClosed, journal.ErrNewerVersion, journal.ErrCorrupt,
		journal.ErrInvalid, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// keyError names the key a sentinel error is about.
func keyError(op string, key uuid.UUID, sentinel error) error {
	return fmt.Errorf("%w: %s %s", sentinel, op, key)
}

// statements are the store's SQL, built once per schema.
type statements struct {
	table        string
	get          string
	lockForTx    string
	beginFast    [3][2]string // [journal.GuardScope][durable]
	insertLocked string
	guard        [2]string // [journal.GuardTurn or GuardSession]
	replace      string
	takeOver     string
	startAtt     [2]string // [durable]
	complete     string
	fence        string
	resolve      string
	importRow    string
	gcPredicate  string
	gcDelete     string
	gcCount      string
}

// closeLast is the SQL expression that closes the last attempt with the
// jsonb object in parameter $n, if it is still open.
func closeLast(n int) string {
	return fmt.Sprintf(`CASE WHEN jsonb_array_length(attempts) > 0 AND NOT (attempts->-1 ? 'end')
		THEN jsonb_set(attempts, '{-1}', (attempts->-1) || $%d::jsonb) ELSE attempts END`, n)
}

// asyncCommit is joined into a statement for a non-durable write: it turns
// synchronous_commit off for that statement's transaction only, so the
// commit returns without waiting for the WAL flush (BeginRequest.Durable).
// The write is visible to every session at once; only a server crash can
// lose it.
const asyncCommit = `(SELECT set_config('synchronous_commit', 'off', true)) AS async_commit`

func buildStatements(q string) statements {
	t := q + ".records"
	s := statements{table: t}
	s.get = `SELECT ` + columns + ` FROM ` + t + ` WHERE key = $1`
	s.lockForTx = s.get + ` FOR UPDATE`

	params := make([]string, len(columnTypes))
	for i, typ := range columnTypes {
		params[i] = fmt.Sprintf("$%d::%s", i+1, typ)
	}
	now := len(columnTypes) + 1 // parameter number of the store's clock
	guardWhere := func(scope journal.GuardScope, tenant, session, turn, tool, nowParam, key string) string {
		w := `g.state = 4 AND g.tenant = ` + tenant + ` AND g.session = ` + session + ` AND g.tool = ` + tool +
			` AND g.key <> ` + key + ` AND g.expires_ns > ` + nowParam
		if scope == journal.GuardTurn {
			w += ` AND g.turn = ` + turn
		} else {
			w += ` AND ` + turn + `::text IS NOT NULL` // the parameter is typed even when unused
		}
		return w
	}
	for scope := journal.GuardTurn; scope <= journal.GuardOff; scope++ {
		for durable := range 2 {
			from, where := "", ""
			if durable == 0 {
				from = ` FROM ` + asyncCommit
			}
			if scope != journal.GuardOff {
				where = fmt.Sprintf(` WHERE NOT EXISTS (SELECT 1 FROM %s g WHERE %s)`, t,
					guardWhere(scope, "$3", "$4", "$5", "$6", fmt.Sprintf("$%d::bigint", now), "$1"))
			} else {
				where = fmt.Sprintf(` WHERE $%d::bigint IS NOT NULL`, now)
			}
			// One round trip: the current record if there is one, else
			// the inserted one. With a record present the INSERT selects
			// no row, so nothing is written and the transaction never
			// takes a transaction id: the replay path stays a read.
			s.beginFast[scope][durable] = `WITH cur AS (SELECT ` + columns + ` FROM ` + t + ` WHERE key = $1::uuid),
				ins AS (INSERT INTO ` + t + ` (` + columns + `) SELECT ` + strings.Join(params, ", ") + from +
				where + ` AND NOT EXISTS (SELECT 1 FROM cur) ON CONFLICT (key) DO NOTHING RETURNING ` + columns + `)
				SELECT true, * FROM ins UNION ALL SELECT false, * FROM cur`
		}
	}
	for _, scope := range []journal.GuardScope{journal.GuardTurn, journal.GuardSession} {
		s.guard[scope] = `SELECT ` + columns + ` FROM ` + t + ` g WHERE ` +
			guardWhere(scope, "$1", "$2", "$3", "$4", "$5", "$6") + ` ORDER BY g.created_ns DESC, g.key DESC LIMIT 1`
	}
	s.importRow = `INSERT INTO ` + t + ` (` + columns + `) VALUES (` + strings.Join(params, ", ") +
		`) ON CONFLICT (key) DO NOTHING`
	s.insertLocked = s.importRow + ` RETURNING ` + columns
	sets := strings.Split(columns, ",")
	for i := range sets {
		sets[i] = strings.TrimSpace(sets[i])
	}
	s.replace = `UPDATE ` + t + ` SET (` + strings.Join(sets[1:], ", ") + `) = (` + strings.Join(params[1:], ", ") +
		`) WHERE key = $1 RETURNING ` + columns
	// Take-over and retake: the caller owns the record under the next
	// token; a retaken settled record goes back to pending with its
	// attempts kept and its outcome dropped.
	s.takeOver = `UPDATE ` + t + ` SET state = 1, output = NULL, error_class = '', error_message = '',
		res_state = NULL, res_output = NULL, res_reason = NULL, res_by = NULL, res_at_ns = NULL,
		lease_owner = $2, lease_token = lease_token + 1,
		lease_expires_ns = $3, updated_ns = $4, expires_ns = GREATEST(expires_ns, $5)
		WHERE key = $1 RETURNING ` + columns
	for durable := range 2 {
		from := ""
		if durable == 0 {
			from = ` FROM ` + asyncCommit
		}
		s.startAtt[durable] = `UPDATE ` + t + ` SET attempts = (` + closeLast(3) + `) || $4::jsonb,
			lease_expires_ns = $5, updated_ns = $6` + from + `
			WHERE key = $1 AND state = 1 AND lease_token = $2`
	}
	s.complete = `UPDATE ` + t + ` SET state = $3, output = $4, error_class = $5, error_message = $6,
		attempts = ` + closeLast(7) + `, lease_expires_ns = $8, updated_ns = $8
		WHERE key = $1 AND state = 1 AND lease_token = $2 RETURNING ` + columns
	s.fence = `SELECT state, lease_token FROM ` + t + ` WHERE key = $1`
	// Resolve: an operator's verdict. It closes an open attempt as
	// "resolved", advances the token so a live owner is fenced, and keeps
	// the record as long again from the verdict as it was kept from its
	// creation.
	s.resolve = `UPDATE ` + t + ` SET state = $2::smallint,
		output = CASE WHEN $2::smallint = 2 THEN $3::bytea END,
		error_class = CASE WHEN $2::smallint = 2 THEN '' ELSE 'resolved' END,
		error_message = CASE WHEN $2::smallint = 2 THEN '' ELSE $4::text END,
		attempts = ` + closeLast(7) + `,
		lease_token = lease_token + 1, lease_expires_ns = $6, updated_ns = $6,
		expires_ns = GREATEST(expires_ns, $6 + (expires_ns - created_ns)),
		res_state = $2, res_output = $3, res_reason = $4, res_by = $5, res_at_ns = $6
		WHERE key = $1 AND state IN (1, 5) RETURNING ` + columns
	s.gcPredicate = `expires_ns <= $1 AND (state <> 1 OR lease_expires_ns IS NULL OR lease_expires_ns <= $1)`
	s.gcDelete = `DELETE FROM ` + t + ` WHERE ` + s.gcPredicate
	s.gcCount = `SELECT count(*) FROM ` + t + ` WHERE ` + s.gcPredicate
	return s
}
