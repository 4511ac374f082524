package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	// Journal holds the store-independent options (Namespace, ReadOnly);
	// Now is ignored (the server's clock decides), and so are bbolt's.
	Journal journal.Options

	// Schema is the PostgreSQL schema that holds the journal's tables. Empty
	// means "agentonce". Journals in different schemas of one database are
	// independent (their own namespace, records and migrations).
	Schema string

	// TestClock, when set, stands in for the server's clock in every
	// statement, so that tests can move time. Nil, the only production
	// setting, means the server's clock decides.
	TestClock func() time.Time

	// MaxConns caps the connection pool. Zero means the URL's
	// pool_max_conns if it has one, else pgxpool's default (the greater of
	// 4 and the number of CPUs).
	MaxConns int32

	// AllowUnsyncedWrites opens a server that acknowledges commits before
	// their WAL is on disk (synchronous_commit or fsync off), where a crash
	// may lose a write-ahead and an Unkeyed tool run twice. False refuses it.
	AllowUnsyncedWrites bool

	// schemaVersion, when set, is the version Open migrates to instead of
	// SchemaVersion: the tests make the journal an older release left.
	schemaVersion int
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
	created  bool             // this Open created the journal
	testNow  func() time.Time // Options.TestClock: every statement's clock parameter, NULL when nil
	closed   atomic.Bool
	sql      statements
}

var _ journal.Store = (*Store)(nil)

// Open connects to the database at url (a PostgreSQL URL or key=value
// string, whose "schema" parameter may name the schema), creates the
// journal's schema or migrates it to SchemaVersion, once, under an
// advisory lock, and returns the store. A read-only Open creates nothing
// (ErrNoJournal) and its sessions are read-only on the server too.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	jo := opts.Journal
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgconn's parse errors redact passwords.
		return nil, fmt.Errorf("postgres journal: parsing the connection URL: %w", err)
	}
	// "schema" is ours, not a PostgreSQL setting.
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
	target := SchemaVersion
	if opts.schemaVersion != 0 {
		target = opts.schemaVersion
	}
	if target < 4 {
		// The tests' older schema: its triggers seal and count.
		cfg.ConnConfig.RuntimeParams[sealSetting] = "on"
		cfg.ConnConfig.RuntimeParams[countRowsSetting] = "on"
	}
	s := &Store{schema: schema, readOnly: jo.ReadOnly, testNow: opts.TestClock,
		sql: buildStatements(pgx.Identifier{schema}.Sanitize(), target)}
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres journal schema %q: %w", schema, err)
	}
	if jo.ReadOnly {
		err = s.openReadOnly(ctx, jo.Namespace)
	} else if err = checkDurable(ctx, s.pool, opts.AllowUnsyncedWrites); err == nil {
		s.ns, s.created, err = migrate(ctx, s.pool, schema, jo.Namespace, time.Now().UnixNano(), target)
	}
	if err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("postgres journal schema %q: %w", schema, err)
	}
	return s, nil
}

// checkDurable refuses, unless allowed, a server that returns from a
// commit before its WAL is flushed.
func checkDurable(ctx context.Context, pool *pgxpool.Pool, allowed bool) error {
	var commit, fsync string
	err := pool.QueryRow(ctx, `SELECT current_setting('synchronous_commit'), current_setting('fsync')`).Scan(&commit, &fsync)
	if err == nil && !allowed && (commit == "off" || fsync == "off") {
		err = fmt.Errorf("%w: synchronous_commit=%s, fsync=%s; want neither off (docs/postgres.md, Durability)", ErrNotDurable, commit, fsync)
	}
	return err
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

// Created reports whether this Open created the journal (the schema held
// none), with a new namespace unless Options.Journal.Namespace gave one.
func (s *Store) Created() bool { return s.created }

// Close closes the connection pool. Calls after Close, Close included,
// return journal.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return journal.ErrClosed
	}
	s.pool.Close()
	return nil
}

// clockArg is the parameter of serverNow: nil, so that the server's clock
// decides, except under the tests' fake clock.
func (s *Store) clockArg() *int64 {
	if s.testNow == nil {
		return nil
	}
	n := s.testNow().UnixNano()
	return &n
}

// serverNow reads the server's clock.
func (s *Store) serverNow(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (time.Time, error) {
	var n int64
	err := q.QueryRow(ctx, s.sql.now, s.clockArg()).Scan(&n)
	return fromNanos(n), err
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
	return slices.ContainsFunc([]error{journal.ErrNotFound, journal.ErrFenced, journal.ErrNotResolvable,
		journal.ErrExists, journal.ErrReadOnly, journal.ErrClosed, journal.ErrNewerVersion, journal.ErrCorrupt,
		journal.ErrInvalid, context.Canceled, context.DeadlineExceeded}, func(e error) bool { return errors.Is(err, e) })
}

// keyError names the key a sentinel error is about.
func keyError(op string, key uuid.UUID, sentinel error) error {
	return fmt.Errorf("%w: %s %s", sentinel, op, key)
}

// statements are the store's SQL, built once per schema.
type statements struct {
	table        string
	cols         string // the record columns to select
	get          string
	now          string
	statsIndexed string
	statsScan    string
	lockForTx    string
	beginFast    [2][2]string // [guard on][durable]
	guard        string
	replace      string
	startAtt     [2]string // [durable]
	renew        string
	complete     string
	fence        string
	resolve      string
	importRow    string
	gcDelete     string
	gcCount      string
}

// closeLast is the SQL expression that closes the last attempt, if it is
// still open, at the instant now (an SQL expression) with the jsonb object
// (class, error) in parameter $n.
func closeLast(n int, now string) string {
	return fmt.Sprintf(`CASE WHEN jsonb_array_length(attempts) > 0 AND NOT (attempts->-1 ? 'end')
		THEN jsonb_set(attempts, '{-1}', (attempts->-1) || jsonb_build_object('end', %s) || $%d::jsonb)
		ELSE attempts END`, now, n)
}

// serverNow is the SQL expression of the database server's clock in Unix
// nanoseconds (PostgreSQL keeps microseconds), read when it is evaluated:
// the clock every lease and expiry of this store is judged by. Parameter
// $n is NULL except under Options.TestClock.
func serverNow(n int) string {
	return fmt.Sprintf(`COALESCE($%d::bigint, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000)`, n)
}

// statementNow is serverNow at the statement's start, stable within it, so
// the planner can estimate a range bounded by it (see expiry).
func statementNow(n int) string {
	return fmt.Sprintf(`COALESCE($%d::bigint, (extract(epoch FROM statement_timestamp()) * 1000000)::bigint * 1000)`, n)
}

// newAttempt is the jsonb array of one attempt with id $id, started at
// now (an SQL expression), quiet $settle nanoseconds later (none when
// NULL).
func newAttempt(id, settle int, now string) string {
	return fmt.Sprintf(`jsonb_build_array(jsonb_strip_nulls(jsonb_build_object('id', $%d::text, 'start', %[3]s,
		'quiet', %[3]s + $%[2]d::bigint)))`, id, settle, now)
}

// rowNow is the instant an UPDATE of a record writes: the statement's
// clock (clk.now, read before the UPDATE waits for the row lock), or the
// record's last change if that is later (in SET, updated_ns is the version
// found after the wait), so a record's times stay in order: no attempt
// ends before it starts, no change comes before the last.
const rowNow = `GREATEST(clk.now, updated_ns)`

// asyncCommit is joined into a statement for a non-durable write
// (BeginRequest.Durable false): synchronous_commit off for its transaction
// only; only a server crash can lose it.
const asyncCommit = `(SELECT set_config('synchronous_commit', 'off', true)) AS async_commit`

// buildStatements builds the statements of schema q at version (always
// SchemaVersion but in the tests, whose older schemas count and seal by
// triggers and have no suppressed column).
func buildStatements(q string, version int) statements {
	b := newStatementBuilder(q, version)
	s := statements{table: b.t, cols: b.sel}
	s.get = `SELECT ` + b.sel + ` FROM ` + b.t + ` WHERE key = $1`
	s.lockForTx = s.get + ` FOR UPDATE`
	s.now = `SELECT ` + serverNow(1)
	s.fence = `SELECT state, lease_token FROM ` + b.t + ` WHERE key = $1`
	b.begin(&s)
	b.whole(&s)
	b.transitions(&s)
	b.expiry(&s)
	return s
}

// statementBuilder holds what the statements of one schema at one version
// are made of.
type statementBuilder struct {
	q       string // the schema, quoted
	t       string // the records table, qualified
	version int
	// suppressed is the guard index's condition.
	suppressed string
	cnt        tally
	// sel is the record columns to select, the tail as NULL before
	// version 6, and write those written, without the checksum (and
	// without the tail before version 6).
	sel   string
	write []string
	// params are the placeholders of a whole record, by column but the
	// checksum, and sealParams the checksum they make.
	params     map[string]string
	sealParams string
}

func newStatementBuilder(q string, version int) *statementBuilder {
	b := &statementBuilder{q: q, t: q + ".records", version: version,
		suppressed: `g.suppressed AND g.state = 4`, cnt: tallyAt(version), sel: columns, params: map[string]string{}}
	if version < 4 {
		b.suppressed = `g.state = 4`
	}
	for i, c := range digestColumns() {
		b.params[c] = fmt.Sprintf("$%d::%s", i+1, columnTypes[i])
		if version >= 6 || !slices.Contains(tailColumns, c) {
			b.write = append(b.write, c)
		}
	}
	if version < 6 {
		b.sel = strings.Replace(columns, strings.Join(tailColumns, ", "), "NULL::bytea, NULL::jsonb", 1)
	}
	b.sealParams = sealExpr(func(c string) string { return b.params[c] })
	return b
}

// values is f of each column of cols, joined by commas.
func values(cols []string, f func(col string) string) string {
	vals := make([]string, len(cols))
	for i, c := range cols {
		vals[i] = f(c)
	}
	return strings.Join(vals, ", ")
}

// clockFrom is the FROM item clk: the server's clock ($n under a test
// clock).
func (b *statementBuilder) clockFrom(n int) string {
	return `(SELECT ` + serverNow(n) + ` AS now) clk`
}

// update is an UPDATE of the record $1 setting the columns of set
// (column: expression) and the checksum they make, from the FROM list
// from, where where holds, returning ret.
func (b *statementBuilder) update(set map[string]string, from, where, ret string) string {
	var parts []string
	for _, c := range digestColumns() {
		if e, ok := set[c]; ok {
			parts = append(parts, c+" = "+e)
		}
	}
	seal := sealExpr(func(c string) string {
		if e, ok := set[c]; ok {
			return e
		}
		if !slices.Contains(b.write, c) {
			return "NULL" // a tail column before version 6
		}
		return c // in SET, the old row's value
	})
	return `UPDATE ` + b.t + ` SET ` + strings.Join(parts, ", ") + `, checksum = ` + seal +
		` FROM ` + from + ` WHERE ` + where + ` RETURNING ` + ret
}

// begin builds Begin's one-round-trip statements, with and without the
// guard's filter and durability, and the guard's query.
func (b *statementBuilder) begin(s *statements) {
	t := b.t
	for guard := range 2 {
		for durable := range 2 {
			from, where := ` FROM clk`, ` WHERE true`
			if durable == 0 {
				from += `, ` + asyncCommit
			}
			if guard == 1 {
				// Any suppressed record of the tool in the session sends
				// Begin to the locked path, where machine.GuardBlocks
				// decides: this is a filter, not the rule.
				where = ` WHERE NOT EXISTS (SELECT 1 FROM ` + t + ` g WHERE ` + b.suppressed + `
					AND g.tenant = $3 AND g.session = $4 AND g.tool = $6 AND g.key <> $1)`
			}
			// One round trip: the server's clock, and the current record
			// if there is one (the INSERT selects no row: a replay stays a
			// read), else the one inserted, beginFastArgs's placed at
			// clk.now. A racing Begin of the same new key fails on the
			// primary key (ON CONFLICT's speculative insertion would cost
			// a WAL record on every insert) and decides again under the lock.
			s.beginFast[guard][durable] = `WITH clk AS MATERIALIZED (SELECT ` + serverNow(17) + ` AS now),
				cur AS (SELECT ` + b.sel + ` FROM ` + t + ` WHERE key = $1::uuid),
				ins AS (INSERT INTO ` + t + ` (` + strings.Join(b.write, ", ") + `, checksum) SELECT ` + b.newRecord() + from +
				where + ` AND NOT EXISTS (SELECT 1 FROM cur) RETURNING ` + b.sel + `)
				SELECT true, clk.now, w.* FROM ins w, clk
				UNION ALL SELECT false, clk.now, cur.* FROM cur, clk`
		}
	}
	// The guard's candidates, newest first, through records_guard_idx.
	s.guard = `SELECT ` + b.sel + ` FROM ` + t + ` g WHERE ` + b.suppressed + ` AND g.tenant = $1
		AND g.session = $2 AND g.tool = $3 AND g.key <> $4 ORDER BY g.created_ns DESC, g.key DESC`
}

// newRecord is the column list of the record a Begin inserts, from its
// parameters, sealed.
func (b *statementBuilder) newRecord() string {
	vals := map[string]string{
		"key": "$1::uuid", "version": "$2::integer", "tenant": "$3::text", "session": "$4::text",
		"turn": "$5::text", "tool": "$6::text", "discriminator": "$7::text", "fingerprint": "$8::bytea",
		"effect": "$9::smallint", "input": "$10::bytea", "state": "1", "output": "NULL",
		"error_class": "''", "error_message": "''", "attempts": newAttempt(11, 15, "clk.now"),
		"lease_owner": "$12::text", "lease_token": "$13::bigint", "lease_expires_ns": "clk.now + $14::bigint",
		"res_state": "NULL", "res_output": "NULL", "res_reason": "NULL", "res_by": "NULL", "res_at_ns": "NULL",
		"created_ns": "clk.now", "updated_ns": "clk.now", "expires_ns": "clk.now + $16::bigint",
		"res_fingerprint": "NULL", "approval": "NULL",
	}
	return values(b.write, func(c string) string { return "(" + vals[c] + ")::" + columnType[c] }) +
		", " + sealExpr(func(c string) string { return vals[c] })
}

// whole builds the statements that write a record whole: Import's insert
// and the rewrite under a row lock.
func (b *statementBuilder) whole(s *statements) {
	t, params := b.t, b.params
	// A record written whole (Import, and a new record under the lock),
	// sealed by the statement; it returns how many it inserted, 0 when
	// the key is taken.
	s.importRow = `WITH ins AS (INSERT INTO ` + t + ` (` + strings.Join(b.write, ", ") + `, checksum) VALUES (` +
		values(b.write, func(c string) string { return params[c] }) + `, ` + b.sealParams + `) ON CONFLICT (key) DO NOTHING
		RETURNING 1) SELECT count(*) FROM ins`
	// A record rewritten whole, under the row lock its transaction holds.
	s.replace = `UPDATE ` + t + ` SET (` + strings.Join(b.write[1:], ", ") + `, checksum) = (` +
		values(b.write[1:], func(c string) string { return params[c] }) + `, ` + b.sealParams + `) WHERE key = $1`
}

// transitions builds the fenced writes of an owner (StartAttempt, Renew,
// Complete) and an operator's Resolve.
func (b *statementBuilder) transitions(s *statements) {
	for durable := range 2 {
		from := b.clockFrom(7)
		if durable == 0 {
			from += `, ` + asyncCommit
		}
		s.startAtt[durable] = `WITH upd AS (` + b.update(map[string]string{
			"attempts":         `(` + closeLast(3, rowNow) + `) || ` + newAttempt(4, 6, rowNow),
			"lease_expires_ns": rowNow + ` + $5::bigint`, "updated_ns": rowNow,
			"expires_ns": coverLease(rowNow + ` + $5::bigint`)},
			from, `key = $1 AND state = 1 AND lease_token = $2`, `1`) + `) SELECT count(*) FROM upd`
	}
	s.renew = b.update(map[string]string{"lease_expires_ns": rowNow + ` + $3::bigint`,
		"expires_ns": coverLease(rowNow + ` + $3::bigint`)},
		b.clockFrom(4)+`, `+asyncCommit, `key = $1 AND state = 1 AND lease_token = $2`, `lease_expires_ns`)
	// Complete changes no indexed column, unless the outcome comes late
	// (settledExpiry): a HOT update. The record was pending (the WHERE
	// says so).
	s.complete = b.update(map[string]string{
		"state": `$3::smallint`, "output": `$4::bytea`, "error_class": `$5::text`, "error_message": `$6::text`,
		"attempts": closeLast(7, rowNow), "lease_expires_ns": rowNow, "updated_ns": rowNow,
		"expires_ns": settledExpiry(rowNow)},
		b.clockFrom(8), `key = $1 AND state = 1 AND lease_token = $2`, b.sel)
	// Resolve: an operator's verdict. It closes an open attempt as
	// "resolved", advances the token so a live owner is fenced, and keeps
	// the record as long again from the verdict as it was kept from its
	// creation.
	s.resolve = b.update(map[string]string{
		"state":            `$2::smallint`,
		"output":           `CASE WHEN $2::smallint = 2 THEN $3::bytea END`,
		"error_class":      `CASE WHEN $2::smallint = 2 THEN '' ELSE 'resolved' END`,
		"error_message":    `CASE WHEN $2::smallint = 2 THEN '' ELSE $4::text END`,
		"attempts":         closeLast(7, rowNow),
		"lease_token":      `lease_token + 1`,
		"lease_expires_ns": rowNow, "updated_ns": rowNow,
		"expires_ns": `GREATEST(expires_ns, ` + rowNow + ` + (expires_ns - created_ns))`,
		"res_state":  `$2::smallint`, "res_output": `$3::bytea`, "res_reason": `$4::text`, "res_by": `$5::text`,
		"res_at_ns": rowNow},
		b.clockFrom(6), `key = $1 AND state IN (1, 5)`, b.sel)
}

// expiry builds GC's statements and those of Stats.
func (b *statementBuilder) expiry(s *statements) {
	t := b.t
	// journal.Expired and machine.Overdue in SQL: states 2, 3, 4 and 6
	// expire; pending (1) and unknown (5) ones past their TTL are kept and
	// counted. One range scan of records_expires_idx up to statementNow,
	// which the planner can estimate (against clock_timestamp() in a CTE it
	// assumes a third of the table and, at a million rows, scans it all).
	past, expires, kept := `expires_ns <= `+statementNow(1), `state IN (2, 3, 4, 6)`, `state IN (1, 5)`
	s.gcDelete = `WITH gone AS (DELETE FROM ` + t + ` WHERE ` + past + ` AND ` + expires + ` RETURNING 1)
		SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM ` + t + ` WHERE ` + past + ` AND ` + kept + `)`
	counts := `count(*) FILTER (WHERE ` + expires + `), count(*) FILTER (WHERE ` + kept + `) FROM ` + t + ` WHERE ` + past
	s.gcCount = `SELECT ` + counts
	// What Stats reads through records_expires_idx: the records past
	// their TTL, as GC finds them; the rest it counts from every row.
	s.statsIndexed = `SELECT e.*, pg_total_relation_size($2::regclass) FROM (SELECT ` + counts + `) e`
	s.statsScan = b.cnt.scan(b.t)
}

// coverLease is journal's coverLease in SQL, for a statement that sets the
// lease to lease: the record is kept at least until its lease ends. It
// leaves expires_ns as it is (and a heap-only update possible) unless the
// lease outlives it. A record with no expiry (expires_ns 0) keeps none.
func coverLease(lease string) string {
	return `CASE WHEN expires_ns <> 0 AND expires_ns < ` + lease + ` THEN ` + lease + ` ELSE expires_ns END`
}

// settledExpiry is journal's settledExpiry in SQL, for an outcome known at
// now: with less than half its TTL left, the record is kept its TTL again
// from now; otherwise (and with no TTL, expires_ns 0) its expiry stays.
func settledExpiry(now string) string {
	return `CASE WHEN expires_ns <> 0 AND expires_ns - ` + now + ` < (expires_ns - created_ns) / 2
		THEN ` + now + ` + (expires_ns - created_ns) ELSE expires_ns END`
}
