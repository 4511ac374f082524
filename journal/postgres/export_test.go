package postgres

import "context"

// OpenAtVersion is Open, except that it creates or migrates the schema
// only up to version, as the release of that SchemaVersion did: the tests
// make older journals with it. The store's writes are the same at every
// version; its Stats needs SchemaVersion.
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
