package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
)

// expiryRowsEnv turns TestExpiryAtScale on and sizes it.
const expiryRowsEnv = "AGENTONCE_EXPIRY_ROWS"

// TestExpiryAtScale measures what expiry costs at scale, two ways, on
// tables of the same rows: the store's GC (one DELETE of the expired rows,
// counted by the statement trigger) on a journal's records table, and
// dropping a whole day of a copy partitioned by expiry day (after moving
// its pending and unknown rows, which never expire, to the default
// partition). Rows expire over ten days, one in twenty pending or unknown;
// one day is expired. For each it logs the WAL written, the
// time, the table's size after, and the steps a second eight writers make
// on the store while it runs, against the same writers idle of expiry.
//
// It is opt-in and slow: AGENTONCE_EXPIRY_ROWS=1000000 (and
// AGENTONCE_PG_URL) turn it on. The figures are in docs/postgres-scale.md.
func TestExpiryAtScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(expiryRowsEnv))
	url := os.Getenv("AGENTONCE_PG_URL")
	if n <= 0 || url == "" {
		t.Skip(expiryRowsEnv + " and AGENTONCE_PG_URL are not both set: the expiry measurement is opt-in")
	}
	ctx := context.Background()
	schema := "peer_expiry_" + randomSuffix()
	now := time.Now()
	clock := now
	var clockMu sync.Mutex
	s, err := postgres.Open(ctx, url, &postgres.Options{Schema: schema, MaxConns: 16,
		TestClock: func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_, _ = s.Pool().Exec(ctx, `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
		_ = s.Close()
	}()
	pool := s.Pool()
	q := pgx.Identifier{schema}.Sanitize()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	day := int64(24 * time.Hour)
	base := now.UnixNano() - 30*day // created a month ago, expiring over ten days from now-1d
	// Rows of the records table's shape, in the order they were written:
	// the first tenth expire on day 0, the next on day 1 (a TTL is the
	// same for all, so a day's expiries were written together), one in
	// twenty pending (1) or unknown (5), the others settled.
	fill := func(table string) {
		start := time.Now()
		exec(`INSERT INTO `+table+` (`+expiryColumns+`)
			SELECT md5(i::text || '`+table+`')::uuid, 1, 'acme', 's-' || (i % 1000), (i % 50)::text, 'charge', '',
				sha256(i::text::bytea), 1, '{"amount":4900,"currency":"USD","customer":"8812"}'::bytea,
				CASE WHEN i % 40 = 0 THEN 1 WHEN i % 40 = 1 THEN 5 ELSE 2 END,
				'{"charge":"ch_3Nq8","status":"succeeded"}'::bytea, '', '',
				'[{"id":"attempt-1","start":1,"end":2}]'::jsonb, 'peer', 1, $2::bigint,
				$2::bigint + i, $2::bigint + i, $3::bigint + (i * 10 / ($1::bigint + 1)) * $4::bigint + (i % 997) * 1000, sha256(''::bytea)
			FROM generate_series(1, $1::bigint) i`, n, base, now.UnixNano()-day, day)
		t.Logf("%s: %d rows in %s", table, n, time.Since(start).Round(time.Millisecond))
	}

	// The journal's own table, and its GC.
	fill(q + `.records`)
	exec(`VACUUM ANALYZE ` + q + `.records`)
	plainBefore := relSize(t, pool, q+".records")
	idle := writeRate(t, s, nil)
	var res journal.GCResult
	gcWAL, gcTime, during := measureExpiry(t, pool, s, func() error {
		var err error
		res, err = s.GC(ctx, journal.GCOptions{})
		return err
	})
	t.Logf("DELETE (GC): removed %d, kept %d unsettled: %s, WAL %s, table %s before, %s after (until VACUUM reuses it); "+
		"writers %.0f steps/s during, %.0f idle", res.Removed, res.KeptUnknown, gcTime.Round(time.Millisecond), mib(gcWAL),
		mib(plainBefore), mib(relSize(t, pool, q+".records")), during, idle)

	// A copy partitioned by expiry day. The primary key must hold the
	// partition key: (key, expires_ns), which is why the journal's table
	// is not partitioned (see docs/postgres-scale.md).
	exec(`CREATE TABLE ` + q + `.parted (LIKE ` + q + `.records INCLUDING DEFAULTS INCLUDING GENERATED)
		PARTITION BY RANGE (expires_ns)`)
	exec(`ALTER TABLE ` + q + `.parted ADD PRIMARY KEY (key, expires_ns)`)
	exec(`CREATE INDEX ON ` + q + `.parted (tenant, session, turn, created_ns DESC)`)
	exec(`CREATE INDEX ON ` + q + `.parted (created_ns DESC)`)
	exec(`CREATE TABLE ` + q + `.parted_open PARTITION OF ` + q + `.parted DEFAULT`)
	first := now.UnixNano() - day
	for d := range 11 {
		lo, hi := first+int64(d)*day, first+int64(d+1)*day
		exec(fmt.Sprintf(`CREATE TABLE %s.parted_d%d PARTITION OF %s.parted FOR VALUES FROM (%d) TO (%d)`, q, d, q, lo, hi))
	}
	fill(q + `.parted`)
	exec(`VACUUM ANALYZE ` + q + `.parted`)
	partBefore := relSizeTree(t, pool, q+".parted")
	clockMu.Lock()
	clock = now.Add(time.Hour) // day 0 (now-1d .. now) is past
	clockMu.Unlock()
	var moved int64
	dropWAL, dropTime, duringDrop := measureExpiry(t, pool, s, func() error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		// Pending and unknown rows never expire: once the day is detached
		// they move back into the table (to the default partition, as no
		// other covers their expiry), and the day goes.
		if _, err := tx.Exec(ctx, `ALTER TABLE `+q+`.parted DETACH PARTITION `+q+`.parted_d0`); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO `+q+`.parted (`+expiryColumns+`)
			SELECT `+expiryColumns+` FROM `+q+`.parted_d0 WHERE state IN (1, 5)`)
		if err != nil {
			return err
		}
		moved = tag.RowsAffected()
		if _, err := tx.Exec(ctx, `DROP TABLE `+q+`.parted_d0`); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	t.Logf("DROP PARTITION: one day, %d unsettled rows moved first: %s, WAL %s, tables %s before, %s after; "+
		"writers %.0f steps/s during, %.0f idle", moved, dropTime.Round(time.Millisecond), mib(dropWAL),
		mib(partBefore), mib(relSizeTree(t, pool, q+".parted")), duringDrop, idle)
}

// expiryColumns are the columns the measurement fills.
const expiryColumns = `key, version, tenant, session, turn, tool, discriminator, fingerprint, effect,
	input, state, output, error_class, error_message, attempts, lease_owner, lease_token, lease_expires_ns,
	created_ns, updated_ns, expires_ns, checksum`

// measureExpiry runs expire while eight writers write through s, and
// returns the WAL the server wrote meanwhile, expire's time and the
// writers' rate.
func measureExpiry(t *testing.T, pool *pgxpool.Pool, s *postgres.Store, expire func() error) (wal float64, took time.Duration, rate float64) {
	t.Helper()
	ctx := context.Background()
	var before, after float64
	if err := pool.QueryRow(ctx, `SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::float8`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var expireErr error
	start := time.Now()
	go func() {
		defer close(done)
		expireErr = expire()
		took = time.Since(start)
	}()
	rate = writeRate(t, s, done)
	<-done
	if expireErr != nil {
		t.Fatal(expireErr)
	}
	if err := pool.QueryRow(ctx, `SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::float8`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	return after - before, took, rate
}

// writeRate is the steps a second of eight writers on s until done is
// closed, or for two seconds when done is nil (at least 200 ms).
func writeRate(t *testing.T, s *postgres.Store, done <-chan struct{}) float64 {
	t.Helper()
	ctx := context.Background()
	step := agentonceStep(s)
	var steps atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := step(ctx); err != nil {
					t.Error(err)
					return
				}
				steps.Add(1)
			}
		})
	}
	start := time.Now()
	if done == nil {
		time.Sleep(2 * time.Second)
	} else {
		<-done
		if time.Since(start) < 200*time.Millisecond {
			time.Sleep(200*time.Millisecond - time.Since(start))
		}
	}
	close(stop)
	wg.Wait()
	return float64(steps.Load()) / time.Since(start).Seconds()
}

func relSize(t *testing.T, pool *pgxpool.Pool, table string) float64 {
	t.Helper()
	var n float64
	if err := pool.QueryRow(context.Background(), `SELECT pg_total_relation_size($1::regclass)::float8`, table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func relSizeTree(t *testing.T, pool *pgxpool.Pool, table string) float64 {
	t.Helper()
	var n float64
	if err := pool.QueryRow(context.Background(), `SELECT coalesce(sum(pg_total_relation_size(relid)), 0)::float8
		FROM pg_partition_tree($1::regclass)`, table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }
