package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/journal"
)

// SchemaVersion is the table layout this package creates and reads: the
// version kept in the meta table. Open migrates an older schema up to it and
// refuses a newer one with journal.ErrNewerVersion.
const SchemaVersion = 7

// migrations[v-1] are the statements that bring the schema from version v-1
// to v. %[1]s is the quoted schema name. Each runs inside Open's
// transaction, under the advisory lock, so several processes starting at
// once apply it once.
var migrations = [][]string{
	// 1: the records table and its indexes.
	{`CREATE TABLE %[1]s.records (
		key              uuid PRIMARY KEY,
		version          integer  NOT NULL,
		tenant           text     NOT NULL,
		session          text     NOT NULL,
		turn             text     NOT NULL,
		tool             text     NOT NULL,
		discriminator    text     NOT NULL,
		fingerprint      bytea    NOT NULL,
		effect           smallint NOT NULL,
		input            bytea,
		state            smallint NOT NULL CHECK (state BETWEEN 1 AND 5),
		output           bytea,
		error_class      text     NOT NULL,
		error_message    text     NOT NULL,
		attempts         jsonb    NOT NULL,
		lease_owner      text     NOT NULL,
		lease_token      bigint   NOT NULL,
		lease_expires_ns bigint,
		res_state        smallint,
		res_output       bytea,
		res_reason       text,
		res_by           text,
		res_at_ns        bigint,
		created_ns       bigint   NOT NULL,
		updated_ns       bigint   NOT NULL,
		expires_ns       bigint   NOT NULL
	)`,
		`CREATE INDEX records_scope_idx   ON %[1]s.records (tenant, session, turn, created_ns DESC)`,
		`CREATE INDEX records_tool_idx    ON %[1]s.records (tool, created_ns DESC)`,
		`CREATE INDEX records_state_idx   ON %[1]s.records (state, created_ns DESC)`,
		`CREATE INDEX records_created_idx ON %[1]s.records (created_ns DESC)`,
		`CREATE INDEX records_expires_idx ON %[1]s.records (expires_ns)`,
		`CREATE INDEX records_guard_idx   ON %[1]s.records (tenant, session, tool, turn, created_ns DESC)
		WHERE state = 4`},

	// 2: the checksum column, sealed by a trigger, and computed here for
	// the rows already stored.
	append(append([]string{`ALTER TABLE %[1]s.records ADD COLUMN checksum bytea`}, sealFunctions(2)...),
		`CREATE TRIGGER records_seal BEFORE INSERT OR UPDATE ON %[1]s.records
		FOR EACH ROW EXECUTE FUNCTION %[1]s.seal_record()`,
		`UPDATE %[1]s.records r SET checksum = %[1]s.record_digest(r)`),

	// 3: the counts, kept by triggers on records (counts.go).
	countsMigration,

	// 4: the store's own writes seal and count themselves, and Complete
	// is a heap-only (HOT) update (docs/postgres-scale.md).
	writesMigration,

	// 5: count_missing, which inserts a missing counter row.
	{tallyAt(5).missingFunction()},

	// 6: intents awaiting approval: the state 6 and its count, the
	// approval and a resolution's fingerprint, in columns the checksum
	// covers only when not NULL, so that no stored row changes. The state
	// CHECK is not validated again: every row holds 1 to 5.
	append(append([]string{`ALTER TABLE %[1]s.records DROP CONSTRAINT records_state_check,
		ADD CONSTRAINT records_state_check CHECK (state BETWEEN 1 AND 6) NOT VALID,
		ADD COLUMN res_fingerprint bytea, ADD COLUMN approval jsonb`,
		`ALTER TABLE %[1]s.counts ADD COLUMN awaiting bigint NOT NULL DEFAULT 0`,
		`DROP FUNCTION %[1]s.count_missing(smallint, text, bigint, bigint, bigint, bigint, bigint, bigint)`,
		tallyAt(6).missingFunction()}, sealFunctions(6)...), tallyAt(6).functions()...),

	// 7: a write carries only what a rule of the guarantee reads. Stats
	// counts the rows when asked, so the count triggers go (CASCADE drops
	// them with their functions), and so does records_created_idx, which
	// no rule reads. The counts table and count_missing stay, unread, for
	// the statements of a schema-6 process still running.
	{`DROP FUNCTION %[1]s.count_row(), %[1]s.count_statement(), %[1]s.count_truncate() CASCADE`,
		`DROP INDEX %[1]s.records_created_idx`},
}

// sealFunctions are record_digest(row), which also lets an operator check
// a row in SQL, and the seal trigger's function, over the columns of
// schema version.
func sealFunctions(version int) []string {
	return []string{`CREATE OR REPLACE FUNCTION %[1]s.record_digest(r %[1]s.records) RETURNS bytea
		LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
		BEGIN
			RETURN ` + digestSQL("r", version) + `;
		END
		$$`,
		`CREATE OR REPLACE FUNCTION %[1]s.seal_record() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF current_setting('` + sealSetting + `', true) = 'on' THEN
				NEW.checksum := ` + digestSQL("NEW", version) + `;
			END IF;
			RETURN NEW;
		END
		$$`}
}

// writesMigration is migration 4. The guard's index moves from the
// predicate state = 4 to a stored column, suppressed, that Complete does
// not change (an indexed column that changes rules out a HOT update); the
// indexes by tool and by state go. The seal trigger runs only for an
// operator's edit; the count triggers skip sessions that count themselves.
var writesMigration = []string{
	`DROP INDEX %[1]s.records_tool_idx`,
	`DROP INDEX %[1]s.records_state_idx`,
	`DROP INDEX %[1]s.records_guard_idx`,
	`ALTER TABLE %[1]s.records ADD COLUMN suppressed boolean GENERATED ALWAYS AS (state = 4) STORED`,
	`CREATE INDEX records_guard_idx ON %[1]s.records (tenant, session, tool, turn, created_ns DESC)
	WHERE suppressed`,
	// Room in each page for the row's outcome, so that Complete's new
	// version fits beside the old one (a HOT update needs the same page).
	`ALTER TABLE %[1]s.records SET (fillfactor = 80)`,
	// A BEFORE UPDATE row trigger, even one whose WHEN is false, makes
	// every UPDATE lock the row first (a WAL record of its own): an
	// operator's sealed UPDATE is resealed after the statement instead,
	// from its transition table, and only an INSERT is sealed before.
	`DROP TRIGGER records_seal ON %[1]s.records`,
	`CREATE TRIGGER records_seal BEFORE INSERT ON %[1]s.records
	FOR EACH ROW WHEN (` + sealOn + `) EXECUTE FUNCTION %[1]s.seal_record()`,
	`CREATE FUNCTION %[1]s.reseal_records() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF pg_trigger_depth() = 1 THEN
			UPDATE %[1]s.records r SET checksum = %[1]s.record_digest(r) FROM sealed_rows n WHERE r.key = n.key;
		END IF;
		RETURN NULL;
	END
	$$`,
	`CREATE TRIGGER records_reseal AFTER UPDATE ON %[1]s.records
	REFERENCING NEW TABLE AS sealed_rows FOR EACH STATEMENT WHEN (` + sealOn + `)
	EXECUTE FUNCTION %[1]s.reseal_records()`,
	`DROP TRIGGER records_count_inserts ON %[1]s.records`,
	`DROP TRIGGER records_count_updates ON %[1]s.records`,
	`CREATE TRIGGER records_count_inserts AFTER INSERT ON %[1]s.records
	REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT WHEN (NOT ` + countedElsewhere + `)
	EXECUTE FUNCTION %[1]s.count_statement()`,
	`CREATE TRIGGER records_count_updates AFTER UPDATE ON %[1]s.records
	REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT WHEN (NOT ` + countedElsewhere + `)
	EXECUTE FUNCTION %[1]s.count_statement()`,
}

// digestSQL is the expression whose value is the checksum of the row
// variable v at schema version: sealExpr of its columns, those of the tail
// NULL before version 6.
func digestSQL(v string, version int) string {
	return sealExpr(func(c string) string {
		if version < 6 && slices.Contains(tailColumns, c) {
			return "NULL"
		}
		return v + "." + c
	})
}

// sealExpr is the SQL expression of the checksum of the row whose column c
// has the value expr(c): the SHA-256 of record_send of a row of every
// column but the checksum and the tail, in table order, then, when a tail
// column is not NULL, of a row of the tail; row.digest encodes exactly
// alike. Each expression is cast to its column's type. An INSERT passes
// its values' expressions, an UPDATE those of the columns it sets and the
// plain names of the others (in SET, the old row's values).
func sealExpr(expr func(col string) string) string {
	var cols, tail []string
	for _, c := range digestColumns() {
		e := "(" + expr(c) + ")::" + columnType[c]
		if slices.Contains(tailColumns, c) {
			tail = append(tail, e)
		} else {
			cols = append(cols, e)
		}
	}
	t := "ROW(" + strings.Join(tail, ", ") + ")"
	return "sha256(record_send(ROW(" + strings.Join(cols, ", ") + ")) || CASE WHEN " + t +
		" IS NULL THEN ''::bytea ELSE record_send(" + t + ") END)"
}

// tailColumns are the record columns of schema 6 on, which the checksum
// covers only when one is not NULL (sealExpr), so that the rows stored
// before them keep their checksums.
var tailColumns = []string{"res_fingerprint", "approval"}

// columnType is the SQL type of each record column.
var columnType = func() map[string]string {
	m := map[string]string{}
	for i, c := range strings.Split(columns, ",") {
		m[strings.TrimSpace(c)] = columnTypes[i]
	}
	return m
}()

// digestColumns is the record columns without the checksum. A migration
// that adds a column must add it to row.digest as well and recreate
// sealFunctions, which fix the column list when created.
func digestColumns() []string {
	var cols []string
	for _, c := range strings.Split(columns, ",") {
		if c = strings.TrimSpace(c); c != "checksum" {
			cols = append(cols, c)
		}
	}
	return cols
}

// sealSetting is the session setting under which the records table's
// trigger seals an edit (SET agentonce.seal = on); without it an edit
// leaves the checksum stale and the row reads as damaged.
const sealSetting = "agentonce.seal"

// sealOn is the condition of a session that seals its edits.
const sealOn = `coalesce(current_setting('` + sealSetting + `', true), '') = 'on'`

// lockKey is the first half of the advisory lock Open takes around
// migrations; the second half is hashtext(schema), so journals in different
// schemas do not wait for each other.
const lockKey = 0x61676f // "ago"

const metaDDL = `CREATE TABLE IF NOT EXISTS %[1]s.meta (
	singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
	namespace  uuid    NOT NULL,
	version    integer NOT NULL,
	created_ns bigint  NOT NULL
)`

// migrate creates or upgrades the journal in schema to version target
// (SchemaVersion but in tests) and returns its namespace. It runs in one
// transaction under a transaction-scoped advisory lock: concurrent Opens
// queue, the first creates, the others read. The transaction is READ
// COMMITTED whatever the server's default, so that each statement of a
// migration sees the writes committed before it (migration 3 relies on it).
func migrate(ctx context.Context, pool interface {
	BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
}, schema string, want uuid.UUID, createdNs int64, target int) (ns uuid.UUID, created bool, err error) {
	q := pgx.Identifier{schema}.Sanitize()
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return uuid.Nil, false, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if _, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, lockKey, schema); err != nil {
		return uuid.Nil, false, err
	}
	version, ns, found, err := readMeta(ctx, tx, schema)
	if err != nil {
		return uuid.Nil, false, err
	}
	if found && version == target {
		// The common case: nothing to create, so no DDL privileges needed.
		return ns, !found, checkNamespace(ns, want, tx.Commit(ctx))
	}
	if version > target {
		return uuid.Nil, false, fmt.Errorf("schema version %d, this package supports up to %d: %w",
			version, target, journal.ErrNewerVersion)
	}
	if !found {
		if _, err = tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+q); err != nil {
			return uuid.Nil, false, err
		}
		if _, err = tx.Exec(ctx, fmt.Sprintf(metaDDL, q)); err != nil {
			return uuid.Nil, false, err
		}
		ns = want
		if ns == uuid.Nil {
			ns = uuid.New()
		}
		if _, err = tx.Exec(ctx, `INSERT INTO `+q+`.meta (namespace, version, created_ns) VALUES ($1, 0, $2)`,
			ns, createdNs); err != nil {
			return uuid.Nil, false, err
		}
	}
	if found && version >= 1 {
		// Every migration from here on takes its strongest lock on records
		// first (schema 4's ALTER TABLE rewrites it): a lock taken weaker
		// and raised later would deadlock with a writer of the older
		// release queued between the two.
		if _, err = tx.Exec(ctx, `LOCK TABLE `+q+`.records IN ACCESS EXCLUSIVE MODE`); err != nil {
			return uuid.Nil, false, err
		}
	}
	for v := version + 1; v <= target; v++ {
		for _, stmt := range migrations[v-1] {
			if _, err = tx.Exec(ctx, fmt.Sprintf(stmt, q)); err != nil {
				return uuid.Nil, false, fmt.Errorf("migration to version %d: %w", v, err)
			}
		}
		if _, err = tx.Exec(ctx, `UPDATE `+q+`.meta SET version = $1`, v); err != nil {
			return uuid.Nil, false, err
		}
	}
	return ns, !found, checkNamespace(ns, want, tx.Commit(ctx))
}

// readMeta reads the meta row; found is false when the schema holds no
// journal yet.
func readMeta(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, schema string) (version int, ns uuid.UUID, found bool, err error) {
	var exists bool
	qs := pgx.Identifier{schema}.Sanitize()
	if err = q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, qs+".meta").Scan(&exists); err != nil || !exists {
		return 0, uuid.Nil, false, err
	}
	err = q.QueryRow(ctx, `SELECT version, namespace FROM `+qs+`.meta`).Scan(&version, &ns)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, uuid.Nil, false, nil
	}
	return version, ns, err == nil, err
}

func checkNamespace(stored, want uuid.UUID, err error) error {
	if err != nil {
		return err
	}
	if want != uuid.Nil && want != stored {
		return fmt.Errorf("%w: Options.Journal.Namespace is %s", journal.ErrNamespaceMismatch, want)
	}
	return nil
}
