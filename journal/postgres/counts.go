package postgres

import (
	"fmt"
	"strings"
)

// The counts table of schemas 3 to 6 (records by state and attempts, per
// tool and counter shard) and the triggers that kept it, for the
// migrations; migration 7 drops the triggers (docs/postgres.md, "Stats").

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
// concurrent writers seldom wait for one counter row's lock.
const countShards = 64

// countRowsSetting is the session setting under which the records table's
// writes are counted row by row (the store's sessions before schema 4);
// every other write is counted once per statement, from its transition
// tables.
const countRowsSetting = "agentonce.count_rows"

// countSelf is the countRowsSetting of a session whose statements count
// themselves (schemas 4 to 6), which no trigger counts.
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
		// Row by row: one counter row, or two in the primary key's order
		// (as the statement function) when the key or tool changed, so
		// that two writers never deadlock on each other's counter rows.
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
		// counter row changed (a row trigger makes a bulk statement take
		// time quadratic in its rows).
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

// scan is the query of the counts by tool of the records table t, in t's
// order, then the attempts and the oldest and newest creation.
func (t tally) scan(table string) string {
	return `SELECT tool, ` + t.each(func(n int, _ string) string {
		return fmt.Sprintf("count(*) FILTER (WHERE state = %d)", n)
	}) + `, coalesce(sum(jsonb_array_length(attempts)), 0)::bigint, min(created_ns), max(created_ns)
		FROM ` + table + ` GROUP BY tool`
}

// missingFunction is count_missing of migrations 5 and 6 (with the
// awaiting count): the shard, the tool, then the counts of t.cols.
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
