package bolt_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/journal/internal/machine"
)

// v1Now is after every record of testdata/v1.journal was created and
// before the long TTLs end: the one-hour ones are expired.
var v1Now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// v1Journal copies testdata/v1.journal (written by layout 1, before the
// indexes were kept in the file) to a temporary file, and returns its path
// and the records it holds.
func v1Journal(t *testing.T) (string, []journal.Record) {
	t.Helper()
	data, err := os.ReadFile("testdata/v1.journal")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "v1.journal")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile("testdata/v1.json")
	if err != nil {
		t.Fatal(err)
	}
	// The fixture is in encoding/json's default form of a Record (its
	// fields by Go name), written before Record had a JSON form of its own.
	var plain []goRecord
	if err := json.Unmarshal(js, &plain); err != nil {
		t.Fatal(err)
	}
	recs := make([]journal.Record, len(plain))
	for i := range plain {
		recs[i] = journal.Record(plain[i])
	}
	return path, recs
}

// goRecord is a journal.Record without its JSON methods.
type goRecord journal.Record

// checkV1 checks that s holds exactly want (a pending record's lease ended
// by a writer's open, at v1Now, is the only change allowed) and that every
// query the indexes answer agrees with the records.
func checkV1(t *testing.T, stage string, s *bolt.Store, want []journal.Record, writer bool) {
	t.Helper()
	ctx := context.Background()
	for _, w := range want {
		got, err := s.Get(ctx, w.Key)
		if err != nil {
			t.Fatalf("%s: Get(%s): %v", stage, w.Key, err)
		}
		if writer && w.State == journal.StatePending {
			w.Lease.Expires = v1Now // the writer's open ended the dead process's lease
		}
		sameRecord(t, stage, got, w)
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatalf("%s: Stats: %v", stage, err)
	}
	scan, err := s.ScanStats(ctx)
	if err != nil {
		t.Fatalf("%s: ScanStats: %v", stage, err)
	}
	if fmt.Sprint(st) != fmt.Sprint(scan) || st.Records != len(want) {
		t.Errorf("%s: Stats = %+v; ScanStats = %+v, %d records in the file", stage, st, scan, len(want))
	}
	if st.Expired == 0 || st.OverdueUnknown == 0 {
		t.Errorf("%s: Stats = %+v; want expired and overdue unknown records", stage, st)
	}
	if res, err := s.GC(ctx, journal.GCOptions{DryRun: true}); err != nil || res.Removed != scan.Expired || res.KeptUnknown != scan.OverdueUnknown {
		t.Errorf("%s: GC dry run = %+v, %v; want the scan's %d expired, %d overdue", stage, res, err, scan.Expired, scan.OverdueUnknown)
	}
	filters := []journal.Filter{{}, {Session: "sess-1"}, {Session: "sess-2", Tenant: "tenant-0"},
		{State: journal.StateUnknown}, {State: journal.StatePending}, {Tool: "charge_card", Limit: 3},
		{Since: want[10].Created, Until: want[40].Created}}
	for _, f := range filters {
		got := listKeys(t, s, f)
		var exp []journal.Record
		for _, r := range want {
			if (f.Tenant == "" || r.Intent.Tenant == f.Tenant) && (f.Session == "" || r.Intent.Session == f.Session) &&
				(f.State == 0 || r.State == f.State) && (f.Tool == "" || r.Intent.Tool == f.Tool) &&
				(f.Since.IsZero() || !r.Created.Before(f.Since)) && (f.Until.IsZero() || r.Created.Before(f.Until)) {
				exp = append(exp, r)
			}
		}
		slices.SortFunc(exp, func(a, b journal.Record) int { return b.Created.Compare(a.Created) })
		var wantKeys []uuid.UUID
		for _, r := range exp {
			wantKeys = append(wantKeys, r.Key)
		}
		if f.Limit > 0 {
			wantKeys = wantKeys[:f.Limit]
		}
		if len(wantKeys) == 0 || !slices.Equal(got, wantKeys) {
			t.Errorf("%s: List(%+v) = %v; want %v", stage, f, got, wantKeys)
		}
	}
	// The guard finds a live suppression of the same tenant, session and
	// tool under another key.
	for _, r := range want {
		if r.State != journal.StateSuppressed || !r.Expires.After(v1Now) {
			continue
		}
		req := journal.BeginRequest{Key: uuid.New(), Intent: r.Intent, Owner: "o", AttemptID: "a", Guard: journal.GuardSession}
		req.Intent.Turn = "another turn"
		if !writer {
			break // a read-only store cannot begin
		}
		res, err := s.Begin(ctx, req)
		if err != nil || res.Outcome != journal.Guarded || res.Record.Key != r.Key {
			t.Errorf("%s: Begin(altered input of suppressed %s) = %v %s, %v; want Guarded by it", stage, r.Key, res.Outcome, res.Record.Key, err)
		}
		break
	}
}

// A journal written by layout 1 opens read-only as it is (queries read
// every record), and a writer's open migrates it in place once: every
// record is kept and every index is built.
func TestMigrateLayout1(t *testing.T) {
	path, want := v1Journal(t)
	clock := func() time.Time { return v1Now }
	sum := fileSum(t, path)
	ro := mustOpen(t, path, &bolt.Options{Journal: journal.Options{ReadOnly: true, Now: clock}})
	if !bolt.Legacy(ro) {
		t.Fatal("a read-only open of a layout-1 journal uses indexes it does not have")
	}
	checkV1(t, "read-only, layout 1", ro, want, false)
	ro.Close()
	if fileSum(t, path) != sum {
		t.Fatal("a read-only open changed the layout-1 file")
	}

	batches := 0
	defer bolt.SetMigrateBatch(7, func(int) { batches++ })()
	w := mustOpen(t, path, &bolt.Options{Journal: journal.Options{Now: clock}})
	if want := (len(want) + 6) / 7; batches != want {
		t.Errorf("migration ran %d batches; want %d", batches, want)
	}
	checkV1(t, "migrated", w, want, true)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	batches = 0
	w = mustOpen(t, path, &bolt.Options{Journal: journal.Options{Now: clock}})
	if batches != 0 {
		t.Errorf("the second writer's open migrated again (%d batches)", batches)
	}
	res, err := w.GC(context.Background(), journal.GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var expired, overdue int
	var kept []journal.Record
	for _, r := range want {
		switch {
		case journal.Expired(&r, v1Now):
			expired++
		case machine.Overdue(&r, v1Now):
			overdue++
			kept = append(kept, r)
		default:
			kept = append(kept, r)
		}
	}
	if res.Removed != expired || res.KeptUnknown != overdue || expired == 0 {
		t.Errorf("GC = %+v; want %d removed, %d kept unknown", res, expired, overdue)
	}
	w.Close()
	ro = mustOpen(t, path, &bolt.Options{Journal: journal.Options{ReadOnly: true, Now: clock}})
	defer ro.Close()
	if bolt.Legacy(ro) {
		t.Fatal("a read-only open of the migrated journal reads every record")
	}
	if st, err := ro.Stats(context.Background()); err != nil || st.Records != len(kept) || st.Expired != 0 {
		t.Errorf("Stats after GC = %+v, %v; want %d records, none expired", st, err, len(kept))
	}
}

const migrateEnv = "AGENTONCE_JOURNAL_MIGRATE_CHILD"

// TestMigrateChild is the process TestMigrateCrash kills: it migrates the
// journal at $AGENTONCE_JOURNAL_MIGRATE_CHILD five records per
// transaction, printing after each commit and waiting after the third.
func TestMigrateChild(t *testing.T) {
	path := os.Getenv(migrateEnv)
	if path == "" {
		t.Skip("helper process for TestMigrateCrash")
	}
	bolt.SetMigrateBatch(5, func(done int) {
		fmt.Println("migrated", done)
		if done >= 15 {
			select {} // killed here
		}
	})
	_, err := bolt.Open(path, nil)
	fmt.Println("open returned:", err)
	os.Exit(3)
}

// A migration killed with SIGKILL midway loses nothing: the file is left
// half migrated (readers scan it), and the next writer's open finishes the
// migration from where it stopped, with every count and index right.
func TestMigrateCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	path, want := v1Journal(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestMigrateChild$")
	cmd.Env = append(os.Environ(), migrateEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if sc.Text() == "migrated 15" {
			cmd.Process.Signal(syscall.SIGKILL)
		} else if !strings.HasPrefix(sc.Text(), "migrated ") {
			t.Fatalf("child said %q", sc.Text())
		}
	}
	cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v; want killed by SIGKILL", cmd.ProcessState)
	}

	clock := func() time.Time { return v1Now }
	ro := mustOpen(t, path, &bolt.Options{Journal: journal.Options{ReadOnly: true, Now: clock}})
	if !bolt.Legacy(ro) {
		t.Fatal("a half-migrated journal's read-only open trusts its partial indexes")
	}
	checkV1(t, "half migrated, read-only", ro, want, false)
	ro.Close()

	done := 0
	defer bolt.SetMigrateBatch(5, func(n int) { done = n })()
	w := mustOpen(t, path, &bolt.Options{Journal: journal.Options{Now: clock}})
	defer w.Close()
	if left := len(want) - 15; done < left || done > left+5 {
		t.Errorf("the resumed migration indexed %d records; want the %d left", done, left)
	}
	checkV1(t, "migration resumed", w, want, true)
}

// A journal that main wrote before the fresh bucket existed (layout 2 with
// the index keyed by minute and session hash, and counters of 8 bytes
// each) has no fresh bucket: the first writer's open rebuilds its indexes
// and counters from the records, whatever the old ones held.
func TestMigrateLayout2WithoutFresh(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	s := mustOpen(t, path, nil)
	recs := fill(t, s, 40)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket([]byte("fresh")); err != nil {
			return err
		}
		// What the earlier layout held: entries and counters that the
		// current code would misread.
		if err := tx.Bucket([]byte("index")).Put(append([]byte{'d'}, make([]byte, 32)...), make([]byte, 8)); err != nil {
			return err
		}
		return tx.Bucket([]byte("counts")).Put([]byte("n"), make([]byte, 8))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	ro := mustOpen(t, path, &bolt.Options{Journal: journal.Options{ReadOnly: true}})
	if !bolt.Legacy(ro) {
		t.Error("a read-only open of a journal without the fresh bucket uses its indexes")
	}
	ro.Close()
	s = mustOpen(t, path, nil)
	defer s.Close()
	if bolt.Legacy(s) {
		t.Fatal("the writer's open left the journal unmigrated")
	}
	agree(t, "migrated layout 2", s, time.Now())
	if st, err := s.Stats(context.Background()); err != nil || st.Records != len(recs) {
		t.Fatalf("Stats = %d records, %v; want %d", st.Records, err, len(recs))
	}
}
