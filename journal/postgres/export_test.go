package postgres

import "context"

// OpenAtVersion is Open, except that it creates or migrates the schema
// only up to version, as the release of that SchemaVersion did: the tests
// make older journals with it. Below version 4 the store leaves the
// sealing and the counting to that schema's triggers, as that release did;
// its Stats needs version 3 at least.
func OpenAtVersion(ctx context.Context, url string, opts Options, version int) (*Store, error) {
	opts.schemaVersion = version
	return Open(ctx, url, &opts)
}

// StatsIndexedSQL is the query of what Stats reads through the indexes
// (parameters: the test clock, the records table's name).
func StatsIndexedSQL(s *Store) string { return s.sql.statsIndexed }

// GCCountSQL and GCDeleteSQL are GC's queries, dry run and not (parameter:
// the test clock).
func GCCountSQL(s *Store) string  { return s.sql.gcCount }
func GCDeleteSQL(s *Store) string { return s.sql.gcDelete }

// RecordColumns is the records table's column list, for tests that copy
// rows in SQL (the table also has a generated column, which an INSERT must
// leave out).
const RecordColumns = columns
