package postgres_test

import (
	"context"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
)

// fillRecords inserts n records into the store's table in one INSERT …
// SELECT generate_series, as an operator's bulk load would: on a
// connection of its own, with the seal on so that the rows read as sound,
// and counted by the statement trigger. Then it analyzes the table. Record
// i was created i milliseconds before now and is spread over 8 tools and
// every state; four in a hundred are past their TTL (two expired, two
// pending or unknown).
func fillRecords(tb testing.TB, s *postgres.Store, n int) {
	tb.Helper()
	ctx := context.Background()
	t := pgx.Identifier{s.Schema()}.Sanitize() + ".records"
	conn, err := pgx.Connect(ctx, pgURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SET agentonce.seal = on`); err != nil {
		tb.Fatal(err)
	}
	_, err = conn.Exec(ctx, `WITH clk AS (SELECT (extract(epoch FROM clock_timestamp()) * 1e6)::bigint * 1000 AS now)
		INSERT INTO `+t+` (key, version, tenant, session, turn, tool, discriminator, fingerprint, effect, input,
			state, output, error_class, error_message, attempts, lease_owner, lease_token, lease_expires_ns,
			created_ns, updated_ns, expires_ns)
		SELECT md5(i::text)::uuid, 1, 'acme', 's-' || i % 1000, (i % 7)::text, 'tool-' || i % 8, '',
			sha256(int8send(i)), 0, NULL,
			CASE i % 50 WHEN 0 THEN 1 WHEN 1 THEN 5 WHEN 2 THEN 3 WHEN 3 THEN 4 ELSE 2 END,
			NULL, '', '', CASE WHEN i % 10 = 0 THEN '[{"id":"a1","start":0,"end":1},{"id":"a2","start":1}]'::jsonb
				ELSE '[{"id":"a1","start":0}]'::jsonb END,
			'bulk', 1, clk.now - i * 1000000, clk.now - i * 1000000, clk.now - i * 1000000,
			clk.now - i * 1000000 + CASE WHEN i % 100 IN (0, 1, 5, 6) THEN 1000 ELSE 7 * 86400 * 1000000000::bigint END
		FROM clk, generate_series(1, $1::bigint) i`, n)
	if err != nil {
		tb.Fatalf("filling %d records: %v", n, err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE `+t); err != nil {
		tb.Fatal(err)
	}
}

// The part of Stats that GC's dry run shares reads the records through
// records_expires_idx, the range up to now, never the whole table. The
// planner must see the range's bound, or it assumes a third of the table is
// in it and, on a large table, scans the table instead.
func TestStatsPlanUsesIndexes(t *testing.T) {
	const n = 20000
	s := openStore(t, nil)
	fillRecords(t, s, n)
	var plan []struct{ Plan planNode }
	err := s.Pool().QueryRow(context.Background(), `EXPLAIN (FORMAT JSON) `+postgres.StatsIndexedSQL(s),
		nil, pgx.Identifier{s.Schema(), "records"}.Sanitize()).Scan(&plan)
	if err != nil || len(plan) != 1 {
		t.Fatalf("EXPLAIN = %v, %v", plan, err)
	}
	expires := 0
	var walk func(p *planNode)
	walk = func(p *planNode) {
		switch {
		case p.Type == "Seq Scan" && p.Relation == "records":
			t.Errorf("Seq Scan on records: Stats reads the table, not an index")
		case p.Index == "records_expires_idx":
			expires++
			// 4 % of the records are past their TTL (fillRecords).
			if p.Rows > n/10 {
				t.Errorf("the planner expects %d of %d records in the range of records_expires_idx up to now; "+
					"it cannot see the bound", p.Rows, n)
			}
		case p.Index != "":
			t.Errorf("%s uses %s", p.Type, p.Index)
		}
		for i := range p.Plans {
			walk(&p.Plans[i])
		}
	}
	walk(&plan[0].Plan)
	if expires != 1 {
		t.Errorf("records_expires_idx read %d times; want 1", expires)
	}
}

// planNode is a node of EXPLAIN (FORMAT JSON).
type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Rows     int        `json:"Plan Rows"`
	Plans    []planNode `json:"Plans"`
}

// BenchmarkStats1M measures Stats (every record, and the expired through
// records_expires_idx) on a journal of 1,000,000 records. It needs
// AGENTONCE_PG_SCALE=1. The records are loaded into a journal of schema
// version 2, which Open then migrates: the log says how long the load and
// the migrations took.
func BenchmarkStats1M(b *testing.B) {
	if os.Getenv("AGENTONCE_PG_SCALE") != "1" {
		b.Skip("AGENTONCE_PG_SCALE=1 runs the benchmarks on a million records")
	}
	const n = 1_000_000
	schema := newSchema(b)
	old := openAtVersion(b, postgres.Options{Schema: schema}, 2)
	start := time.Now()
	fillRecords(b, old, n)
	b.Logf("loaded %d records in %v", n, time.Since(start).Round(time.Millisecond))
	old.Close()
	start = time.Now()
	s := openIn(b, schema, nil)
	b.Logf("migrated them to version %d in %v", postgres.SchemaVersion, time.Since(start).Round(time.Millisecond))
	ctx := context.Background()
	st, err := s.Stats(ctx)
	if err != nil {
		b.Fatal(err)
	}
	scan, err := s.ScanStats(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if st.Records != n || !reflect.DeepEqual(st, scan) {
		b.Fatalf("Stats = %+v\nScanStats = %+v; want them equal, %d records", st, scan, n)
	}
	for _, bc := range []struct {
		name  string
		stats func(context.Context) (journal.Stats, error)
	}{{"Stats", s.Stats}, {"ScanStats", s.ScanStats}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := bc.stats(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
		})
	}
	b.Run("GCDryRun", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.GC(ctx, journal.GCOptions{DryRun: true}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	})
}

// GC, dry run or not, finds the records past their TTL through
// records_expires_idx, as Stats does, rather than by reading the table.
func TestGCPlanUsesTheExpiryIndex(t *testing.T) {
	const n = 20000
	s := openStore(t, nil)
	fillRecords(t, s, n)
	for name, sql := range map[string]string{"dry run": postgres.GCCountSQL(s), "delete": postgres.GCDeleteSQL(s)} {
		var plan []struct{ Plan planNode }
		if err := s.Pool().QueryRow(context.Background(), `EXPLAIN (FORMAT JSON) `+sql, nil).Scan(&plan); err != nil || len(plan) != 1 {
			t.Fatalf("%s: EXPLAIN = %v, %v", name, plan, err)
		}
		expires := 0
		var walk func(p *planNode)
		walk = func(p *planNode) {
			switch {
			case p.Type == "Seq Scan" && p.Relation == "records":
				t.Errorf("%s: Seq Scan on records: GC reads the table, not the expiry index", name)
			case p.Index == "records_expires_idx":
				expires++
				if p.Rows > n/10 { // 4 % are past their TTL (fillRecords)
					t.Errorf("%s: the planner expects %d of %d records up to now; it cannot see the bound", name, p.Rows, n)
				}
			}
			for i := range p.Plans {
				walk(&p.Plans[i])
			}
		}
		walk(&plan[0].Plan)
		if expires == 0 {
			t.Errorf("%s: the plan does not read records_expires_idx", name)
		}
	}
}
