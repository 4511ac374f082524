package postgres

import (
	"cmp"
	"fmt"
	"strings"
)

// The counts table holds, for each tool and counter shard, how many records
// are in each state and how many attempts they have. Triggers on records
// keep it in the transaction of each write, so Stats reads a few rows per
// tool instead of the whole table (see the package documentation).

// countStates are the counts table's columns of records by state, in the
// order of journal.State from StatePending (1): to StateUnknown (5) before
// schema 6, to StateAwaiting (6) from it on.
var countStates = []string{"pending", "succeeded", "failed", "suppressed", "unknown", "awaiting"}

// tally is the counts table's state columns at one schema version; its
// methods build the SQL that counts by them.
type tally []string

func tallyAt(version int) tally {
	if version < 6 {
		return countStates[:5:5]
	}
	return countStates
}

// cols is t's columns and then the attempts.
func (t tally) cols() []string { return append(t[:len(t):len(t)], "attempts") }

// columns is the counts table's column list.
func (t tally) columns() string { return "shard, tool, " + strings.Join(t.cols(), ", ") }

// each is f of each state's number and column, joined by commas.
func (t tally) each(f func(state int, col string) string) string {
	vals := make([]string, len(t))
	for i, col := range t {
		vals[i] = f(i+1, col)
	}
	return strings.Join(vals, ", ")
}

// countShards is how many rows share each tool's counts, so that
// concurrent writers seldom wait for one counter row's lock
// (docs/postgres.md, "Stats"). With 64 writers of one tool
// (BenchmarkConcurrent64), 64 shards did 10-20 % more calls a second than
// 16, and 256 no more than 64.
const countShards = 64

// ownShardSQL is the counter shard of the store's own writes: the server
// process of the connection, which consecutive connections of a pool never
// share in the low bits. A shard by key made two concurrent writes meet one
// time in countShards; with 16 workers (bench/peer) this shard did 10-20 %
// more steps a second.
var ownShardSQL = fmt.Sprintf("(pg_backend_pid() & %d)::smallint", countShards-1)

// countRowsSetting is the session setting under which the records table's
// writes are counted row by row, as each row is written: the store sets it
// on each of its connections, whose writes are single rows. The INSERTs
// and UPDATEs of every other session (psql, a bulk load, a program of its
// own), and every DELETE (GC), are counted once per statement instead, from
// the statement's transition tables. Both ways keep the same counts; the
// setting only picks the cheaper one.
const countRowsSetting = "agentonce.count_rows"

// countSelf is countRowsSetting's value in the store's sessions (schema 4
// on): their statements add what they change to the counts themselves
// (tally.delta, tally.one), so neither the row nor the statement triggers
// count them.
const countSelf = "self"

// countedElsewhere is the condition under which the statement triggers
// leave an INSERT or UPDATE uncounted: the session counts row by row, or
// counts itself.
const countedElsewhere = `coalesce(current_setting('` + countRowsSetting + `', true), '') IN ('on', '` + countSelf + `')`

// countRows is the trigger condition of a session that counts row by row.
const countRows = `coalesce(current_setting('` + countRowsSetting + `', true), '') = 'on'`

// countsMigration is migration 3: the counts table, its triggers, and the
// counts of the rows already stored. The triggers come before the fill: the
// first CREATE TRIGGER locks records against writers until the migration's
// transaction commits, so no write falls between the fill and the
// triggers, and the fill (a statement of its own under READ COMMITTED)
// sees every write committed before the lock.
var countsMigration = append(append([]string{`CREATE TABLE %[1]s.counts (
		shard      smallint NOT NULL,
		tool       text     NOT NULL,
		pending    bigint   NOT NULL,
		succeeded  bigint   NOT NULL,
		failed     bigint   NOT NULL,
		suppressed bigint   NOT NULL,
		unknown    bigint   NOT NULL,
		attempts   bigint   NOT NULL,
		PRIMARY KEY (shard, tool)
	)`}, tallyAt(3).functions()...),
	`CREATE FUNCTION %[1]s.count_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		DELETE FROM %[1]s.counts;
		RETURN NULL;
	END
	$$`,
	`CREATE TRIGGER records_count_insert AFTER INSERT ON %[1]s.records
	FOR EACH ROW WHEN (`+countRows+`) EXECUTE FUNCTION %[1]s.count_row()`,
	`CREATE TRIGGER records_count_update AFTER UPDATE ON %[1]s.records
	FOR EACH ROW WHEN (`+countRows+` AND (OLD.state <> NEW.state OR OLD.tool <> NEW.tool
		OR OLD.key <> NEW.key OR jsonb_array_length(OLD.attempts) <> jsonb_array_length(NEW.attempts)))
	EXECUTE FUNCTION %[1]s.count_row()`,
	`CREATE TRIGGER records_count_inserts AFTER INSERT ON %[1]s.records
	REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT WHEN (NOT `+countRows+`)
	EXECUTE FUNCTION %[1]s.count_statement()`,
	`CREATE TRIGGER records_count_updates AFTER UPDATE ON %[1]s.records
	REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT WHEN (NOT `+countRows+`)
	EXECUTE FUNCTION %[1]s.count_statement()`,
	`CREATE TRIGGER records_count_deletes AFTER DELETE ON %[1]s.records
	REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION %[1]s.count_statement()`,
	`CREATE TRIGGER records_count_truncate AFTER TRUNCATE ON %[1]s.records
	FOR EACH STATEMENT EXECUTE FUNCTION %[1]s.count_truncate()`,
	`INSERT INTO %[1]s.counts (`+tallyAt(3).columns()+`)
	SELECT `+shardSQL("key")+`, tool,
		`+tallyAt(3).each(func(n int, _ string) string { return fmt.Sprintf("count(*) FILTER (WHERE state = %d)", n) })+`,
		sum(jsonb_array_length(attempts))
	FROM %[1]s.records GROUP BY 1, 2`)

// functions are count_row and count_statement, which the triggers call.
func (t tally) functions() []string {
	return []string{
		// Row by row, in the store's sessions. A new state of a record with
		// the same key and tool (the common write: pending to settled) is
		// one update of one counter row. A row that moves to another
		// counter row (an operator changed its key or tool) takes two, in
		// the primary key's order, as the statement function does, so that
		// two writers never deadlock on each other's counter rows. The
		// update trigger's WHEN clause leaves out the updates that change
		// no count (a lease renewal).
		`CREATE OR REPLACE FUNCTION %[1]s.count_row() RETURNS trigger LANGUAGE plpgsql AS $$
	DECLARE
		ns smallint := ` + shardSQL("NEW.key") + `;
		os smallint;
	BEGIN
		IF TG_OP = 'INSERT' THEN
			` + t.add("ns", "NEW.tool", "NEW", "") + `
			RETURN NULL;
		END IF;
		os := ` + shardSQL("OLD.key") + `;
		IF (os, OLD.tool) = (ns, NEW.tool) THEN
			` + t.add("ns", "NEW.tool", "NEW", "OLD") + `
		ELSIF (os, OLD.tool) < (ns, NEW.tool) THEN
			` + t.add("os", "OLD.tool", "", "OLD") + `
			` + t.add("ns", "NEW.tool", "NEW", "") + `
		ELSE
			` + t.add("ns", "NEW.tool", "NEW", "") + `
			` + t.add("os", "OLD.tool", "", "OLD") + `
		END IF;
		RETURN NULL;
	END
	$$`,
		// Statement by statement, from the transition tables: one update per
		// counter row the statement changed, in the primary key's order. A
		// row trigger would update the same counter row once per row, each
		// update slower than the last (it passes every earlier version of
		// the row): a bulk statement would take time quadratic in its rows.
		`CREATE OR REPLACE FUNCTION %[1]s.count_statement() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF TG_OP = 'INSERT' THEN
			` + t.statement("SELECT key, tool, state, attempts, 1 AS n FROM new_rows") + `
		ELSIF TG_OP = 'DELETE' THEN
			` + t.statement("SELECT key, tool, state, attempts, -1 AS n FROM old_rows") + `
		ELSE
			` + t.statement("SELECT key, tool, state, attempts, 1 AS n FROM new_rows "+
			"UNION ALL SELECT key, tool, state, attempts, -1 FROM old_rows") + `
		END IF;
		RETURN NULL;
	END
	$$`}
}

// shardSQL is the SQL expression of the counter shard of the uuid key: the
// low bits of its last byte, random in both random and name-based UUIDs.
func shardSQL(key string) string {
	return fmt.Sprintf("(get_byte(uuid_send(%s), 15) & %d)::smallint", key, countShards-1)
}

// upsert is the ON CONFLICT clause that adds the proposed row to the
// counter row c.
func (t tally) upsert() string {
	cols := t.cols()
	for i, c := range cols {
		cols[i] = c + " = c." + c + " + excluded." + c
	}
	return `ON CONFLICT (shard, tool) DO UPDATE SET ` + strings.Join(cols, ", ")
}

// add is the PL/pgSQL statement that adds the row variable plus (if not
// empty) and takes away the row variable minus (if not empty) from the
// counter row of shard and tool (SQL expressions).
func (t tally) add(shard, tool, plus, minus string) string {
	term := func(f func(v string) string) string {
		switch {
		case minus == "":
			return f(plus)
		case plus == "":
			return "-" + f(minus)
		}
		return f(plus) + " - " + f(minus)
	}
	vals := []string{shard, tool}
	for i := range t {
		vals = append(vals, term(func(v string) string { return fmt.Sprintf("(%s.state = %d)::int", v, i+1) }))
	}
	vals = append(vals, term(func(v string) string { return "jsonb_array_length(" + v + ".attempts)" }))
	return `INSERT INTO %[1]s.counts AS c (` + t.columns() + `) VALUES (` + strings.Join(vals, ", ") + `)
			` + t.upsert() + `;`
}

// change is the query of the change to the counts, per shard and tool,
// that the rows of the query rows make (columns key, tool, state, n: 1 for
// a record now in the table, -1 for one no longer in it, 0 for one whose
// state did not change), with natt the change in their attempts (an SQL
// expression over d), leaving out the counter rows it does not change.
func (t tally) change(rows, natt string) string {
	return `SELECT * FROM (
			SELECT ` + shardSQL("d.key") + ` AS shard, d.tool,
				` + t.each(func(n int, col string) string {
		return fmt.Sprintf("sum(CASE WHEN d.state = %d THEN d.n ELSE 0 END) AS %s", n, col)
	}) + `,
				sum(` + natt + `) AS attempts
			FROM (` + rows + `) d GROUP BY 1, 2) g
		WHERE (` + t.each(func(_ int, col string) string { return col }) + `, attempts)
			<> (` + t.each(func(int, string) string { return "0" }) + `, 0)`
}

// statement is the PL/pgSQL statement that adds to the counts the rows of
// the query rows (columns key, tool, state, attempts, n), one counter row
// at a time in the primary key's order.
func (t tally) statement(rows string) string {
	return `INSERT INTO %[1]s.counts AS c (` + t.columns() + `)
			` + t.change(rows, "d.n * jsonb_array_length(d.attempts)") + `
			ORDER BY shard, tool
			` + t.upsert() + `;`
}

// stats is the query of the counts by tool, in t's order and then the
// attempts, from the counts table (Stats) when rows is false, else from
// every record (ScanStats). q is the quoted schema.
func (t tally) stats(q string, rows bool) string {
	if rows {
		return `SELECT tool, ` + t.each(func(n int, _ string) string {
			return fmt.Sprintf("count(*) FILTER (WHERE state = %d)", n)
		}) + `, coalesce(sum(jsonb_array_length(attempts)), 0)::bigint
		FROM ` + q + `.records GROUP BY tool`
	}
	return `SELECT tool, ` + t.each(func(_ int, col string) string { return "sum(" + col + ")::bigint" }) + `,
		sum(attempts)::bigint FROM ` + q + `.counts GROUP BY tool`
}

// delta is the SQL, for the CTEs of a store's write, that adds to the
// counts of schema q the rows of the query rows (change's, with natt the
// change in a record's attempts). It is three CTEs: cnt_d, the change;
// cnt_u, an UPDATE of the counter rows that exist (the common case: a
// plain UPDATE, which writes less WAL than ON CONFLICT DO UPDATE, whose
// row lock is a record of its own); and cnt_i, the upsert of those that do
// not, for a new tool or shard, in the primary key's order as the
// statement triggers do.
func (t tally) delta(q, rows string) string {
	sets := t.cols()
	for i, c := range sets {
		sets[i] = c + " = c." + c + " + d." + c
	}
	return `cnt_d AS (` + t.change(rows, "d.natt") + `),
		cnt_u AS (UPDATE ` + q + `.counts c SET ` + strings.Join(sets, ", ") + `
			FROM cnt_d d WHERE c.shard = d.shard AND c.tool = d.tool RETURNING c.shard, c.tool),
		cnt_i AS (INSERT INTO ` + q + `.counts AS c (` + t.columns() + `)
			SELECT * FROM cnt_d d WHERE NOT EXISTS (SELECT 1 FROM cnt_u u WHERE (u.shard, u.tool) = (d.shard, d.tool))
			ORDER BY shard, tool
			` + t.upsert() + `)`
}

// one is delta for a write of one record, whose change to the counts is
// known when the statement is built: cnt_u, the UPDATE that adds to the
// counter row of each row w of the CTE from the expressions add gives
// (counts column: SQL expression over w), returning one row per counter
// row it found; it needs neither delta's aggregate nor its sort, which
// cost more than the UPDATE. A missing counter row (a new tool or shard,
// after a TRUNCATE) is inserted by cnt_i before schema 5, from it on by
// missing, which only then runs an INSERT.
func (t tally) one(q, from string, add map[string]string, version int) string {
	var sets []string
	for _, c := range t.cols() {
		if e, ok := add[c]; ok {
			sets = append(sets, c+" = c."+c+" + "+e)
		}
	}
	cte := `cnt_u AS (UPDATE ` + q + `.counts c SET ` + strings.Join(sets, ", ") + `
			FROM ` + from + ` w WHERE c.shard = ` + ownShardSQL + ` AND c.tool = w.tool RETURNING 1)`
	if version >= 5 {
		return cte
	}
	return cte + `,
		cnt_i AS (INSERT INTO ` + q + `.counts AS c (` + t.columns() + `)
			SELECT ` + ownShardSQL + `, w.tool, ` + t.values(add) + ` FROM ` + from + ` w
			WHERE NOT EXISTS (SELECT 1 FROM cnt_u)
			` + t.upsert() + `)`
}

// values is add's expressions in the order of t.cols, 0 for a column add
// leaves out.
func (t tally) values(add map[string]string) string {
	var vals []string
	for _, c := range t.cols() {
		vals = append(vals, cmp.Or(add[c], "0"))
	}
	return strings.Join(vals, ", ")
}

// missing is the condition, for the WHERE of the last SELECT of a
// statement with one's cnt_u, over its row w, that adds add to w's counter
// row when cnt_u found none: true, having called count_missing (volatile,
// so CASE calls it only then), which inserts the row or, when a concurrent
// write inserted it first, adds to it. Before schema 5 it is true.
func (t tally) missing(q string, add map[string]string, version int) string {
	if version < 5 {
		return `true`
	}
	return `CASE WHEN EXISTS (SELECT 1 FROM cnt_u) THEN true
		ELSE ` + q + `.count_missing(` + ownShardSQL + `, w.tool, ` + t.values(add) + `) END`
}

// missingFunction is count_missing, which missing calls: migration 5, and
// again in migration 6 with the awaiting count. Its arguments are the
// shard, the tool, then the counts in the order of t.cols.
func (t tally) missingFunction() string {
	args, params := []string{"smallint", "text"}, []string{"$1", "$2"}
	for i := range t.cols() {
		args, params = append(args, "bigint"), append(params, fmt.Sprintf("$%d", i+3))
	}
	return `CREATE FUNCTION %[1]s.count_missing(` + strings.Join(args, ", ") + `)
	RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
	BEGIN
		INSERT INTO %[1]s.counts AS c (` + t.columns() + `)
		VALUES (` + strings.Join(params, ", ") + `)
		` + t.upsert() + `;
		RETURN true;
	END
	$$`
}

// stateDelta is the counts expressions of a record that moves from the
// state whose SQL expression is from (empty: a new record) to the state
// whose expression is to, each column of countStates gaining (to = n) and
// losing (from = n).
func stateDelta(from, to string) map[string]string {
	m := map[string]string{}
	for i, c := range countStates {
		var terms []string
		if to != "" {
			terms = append(terms, fmt.Sprintf("(%s = %d)::int", to, i+1))
		}
		if from != "" {
			terms = append(terms, fmt.Sprintf("- (%s = %d)::int", from, i+1))
		}
		m[c] = strings.Join(terms, " ")
	}
	return m
}
