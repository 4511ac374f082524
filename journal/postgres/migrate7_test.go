package postgres_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/journal/postgres"
)

// A journal of schema version 6 is migrated to version 7 (a write carries
// only what a rule reads): as TestMigrationToCountMissing; and then no
// count trigger is left on records, nor records_created_idx, while the
// counts table and count_missing stay for the statements of a schema-6
// process still running.
func TestMigrationToWritePathFloor(t *testing.T) {
	testMigration(t, 6, 7, true)
	ctx := context.Background()
	s := openStore(t, nil)
	if postgres.SchemaVersion != 7 {
		t.Skipf("SchemaVersion is %d: this checks what version 7 left", postgres.SchemaVersion)
	}
	q := pgx.Identifier{s.Schema()}.Sanitize()
	rows, err := s.Pool().Query(ctx, `SELECT tgname FROM pg_trigger WHERE tgrelid = $1::regclass AND NOT tgisinternal
		ORDER BY tgname`, q+".records")
	if err != nil {
		t.Fatal(err)
	}
	triggers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"records_reseal", "records_seal"}; !slices.Equal(triggers, want) {
		t.Errorf("triggers on records = %v; want only the operator's seal, %v", triggers, want)
	}
	var created, counts, missing bool
	err = s.Pool().QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL,
		EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'count_missing' AND pronamespace = $3::regnamespace)`,
		q+".records_created_idx", q+".counts", q).Scan(&created, &counts, &missing)
	if err != nil || created || !counts || !missing {
		t.Errorf("records_created_idx %v, counts %v, count_missing %v (%v); want the index gone, the others kept",
			created, counts, missing, err)
	}
}
