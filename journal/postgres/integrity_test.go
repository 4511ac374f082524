package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
)

// settled writes one succeeded record with output through the store.
func settled(t *testing.T, s *postgres.Store, n int, output string) journal.Record {
	t.Helper()
	ctx := context.Background()
	req := request(n, `{"n":1}`)
	res, err := s.Begin(ctx, req)
	if err != nil {
		t.Fatalf("Begin(%s): %v", req.Key, err)
	}
	r, err := s.Complete(ctx, journal.Completion{Key: req.Key, Token: res.Token, State: journal.StateSucceeded, Output: []byte(output)})
	if err != nil {
		t.Fatalf("Complete(%s): %v", req.Key, err)
	}
	return r
}

// psql runs statements on a connection of its own, as an operator's psql
// or another program would: not the store's, so not sealed.
func psql(t *testing.T, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, stmt := range stmts {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// A row whose output was changed behind the store's back is an error
// wrapping ErrCorrupt naming the key, on every path that reads it; never an
// answer.
func TestDamagedRowIsCorrupt(t *testing.T) {
	ctx := context.Background()
	schema := newSchema(t)
	q := pgx.Identifier{schema}.Sanitize()
	s := openIn(t, schema, nil)
	damaged := settled(t, s, 1, `{"sent":true}`)
	healthy := settled(t, s, 2, `{"sent":true}`)
	nulled := settled(t, s, 3, `{"sent":true}`)
	psql(t,
		`UPDATE `+q+`.records SET output = convert_to('{"sent":tfals', 'UTF8') WHERE key = '`+damaged.Key.String()+`'`,
		`UPDATE `+q+`.records SET checksum = NULL WHERE key = '`+nulled.Key.String()+`'`)

	for _, key := range []uuid.UUID{damaged.Key, nulled.Key} {
		named := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, journal.ErrCorrupt) {
				t.Errorf("%s of damaged row %s: error %v; want ErrCorrupt", what, key, err)
			} else if !strings.Contains(err.Error(), key.String()) {
				t.Errorf("%s error %q; want it to name key %s", what, err, key)
			}
		}
		got, err := s.Get(ctx, key)
		named("Get", err)
		if err == nil {
			t.Errorf("Get(%s) = output %s; want no record", key, got.Output)
		}
		req := request(map[uuid.UUID]int{damaged.Key: 1, nulled.Key: 3}[key], `{"n":1}`)
		res, err := s.Begin(ctx, req)
		named("Begin", err)
		if err == nil {
			t.Errorf("Begin(%s) = %v with output %s; want no answer", key, res.Outcome, res.Record.Output)
		}
		ro := openIn(t, schema, &journal.Options{ReadOnly: true})
		_, err = ro.Get(ctx, key)
		named("read-only Get", err)
	}
	var listErr error
	for _, err := range s.List(ctx, journal.Filter{}) {
		if err != nil {
			listErr = err
			break
		}
	}
	if !errors.Is(listErr, journal.ErrCorrupt) {
		t.Errorf("List with damaged rows: error %v; want ErrCorrupt", listErr)
	}
	if r, err := s.Get(ctx, healthy.Key); err != nil || string(r.Output) != `{"sent":true}` {
		t.Errorf("Get(healthy %s) = %s, %v; want {\"sent\":true}", healthy.Key, r.Output, err)
	}
}

// An edit made deliberately, in a session that turned the seal on, is
// sealed like the store's own writes: the escape hatch the package
// documents for a DBA's repair.
func TestSealedEditReads(t *testing.T) {
	ctx := context.Background()
	schema := newSchema(t)
	q := pgx.Identifier{schema}.Sanitize()
	s := openIn(t, schema, nil)
	r := settled(t, s, 1, `{"sent":true}`)
	psql(t, `SET agentonce.seal = on`,
		`UPDATE `+q+`.records SET output = convert_to('{"sent":false}', 'UTF8') WHERE key = '`+r.Key.String()+`'`)
	got, err := s.Get(ctx, r.Key)
	if err != nil || string(got.Output) != `{"sent":false}` {
		t.Errorf("Get(%s) after a sealed edit = %s, %v; want {\"sent\":false}", r.Key, got.Output, err)
	}
}

// A journal of schema version 1 (no checksums) is migrated: its rows get
// their checksums, read as before, and damage to them is then detected.
func TestMigrationSealsExistingRows(t *testing.T) {
	ctx := context.Background()
	schema := newSchema(t)
	q := pgx.Identifier{schema}.Sanitize()
	s := openAtVersion(t, postgres.Options{Schema: schema}, 2)
	old := settled(t, s, 1, `{"sent":true}`)
	s.Close()
	// Back to version 1, as the release before checksums left it.
	psql(t, `DROP TRIGGER records_seal ON `+q+`.records`,
		`DROP FUNCTION `+q+`.seal_record()`,
		`DROP FUNCTION `+q+`.record_digest(`+q+`.records)`,
		`ALTER TABLE `+q+`.records DROP COLUMN checksum`,
		`UPDATE `+q+`.meta SET version = 1`)

	s = openIn(t, schema, nil)
	got, err := s.Get(ctx, old.Key)
	if err != nil || string(got.Output) != `{"sent":true}` {
		t.Fatalf("Get(%s) after migrating = %s, %v; want {\"sent\":true}", old.Key, got.Output, err)
	}
	psql(t, `UPDATE `+q+`.records SET output = convert_to('{"sent":tfals', 'UTF8') WHERE key = '`+old.Key.String()+`'`)
	if got, err := s.Get(ctx, old.Key); !errors.Is(err, journal.ErrCorrupt) {
		t.Errorf("Get(%s) of a migrated row changed behind the store = %s, %v; want ErrCorrupt", old.Key, got.Output, err)
	}
}

// Verify lists the rows changed behind the store and nothing else, from a
// read-only store.
func TestVerify(t *testing.T) {
	ctx := context.Background()
	schema := newSchema(t)
	q := pgx.Identifier{schema}.Sanitize()
	s := openIn(t, schema, nil)
	damaged := settled(t, s, 1, `{"sent":true}`)
	settled(t, s, 2, `{"sent":true}`)
	ro := openIn(t, schema, &journal.Options{ReadOnly: true})
	verify := func() (int, map[uuid.UUID]error) {
		t.Helper()
		bad := map[uuid.UUID]error{}
		n, err := ro.Verify(ctx, func(key uuid.UUID, err error) { bad[key] = err })
		if err != nil {
			t.Fatalf("Verify error: %v", err)
		}
		return n, bad
	}
	if n, bad := verify(); n != 2 || len(bad) != 0 {
		t.Fatalf("Verify(healthy) = %d rows, damaged %v; want 2, none", n, bad)
	}
	psql(t, `UPDATE `+q+`.records SET state = 5 WHERE key = '`+damaged.Key.String()+`'`)
	if n, bad := verify(); n != 2 || len(bad) != 1 || !errors.Is(bad[damaged.Key], journal.ErrCorrupt) {
		t.Errorf("Verify(one row's state changed) = %d rows, damaged %v; want 2, %s", n, bad, damaged.Key)
	}
}

// Compiled, not run: it needs a server (see example_test.go).
func ExampleStore_Verify() {
	ctx := context.Background()
	s, err := postgres.Open(ctx, os.Getenv("AGENTONCE_PG_URL"), &postgres.Options{Journal: journal.Options{ReadOnly: true}})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	damaged := 0
	n, err := s.Verify(ctx, func(key uuid.UUID, err error) {
		damaged++
		fmt.Println(key, err)
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d rows, %d damaged\n", n, damaged)
}
