package main

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestStatsJSON(t *testing.T) {
	fx := buildFixture(t)
	r := agentctl(t, false, "stats", "--journal", fx.path, "--json")
	if r.code != 0 {
		t.Fatalf("stats = %d, %s", r.code, r.stderr)
	}
	var s statsJSON
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(fx.path)
	want := map[string]int{"pending": 4, "succeeded": 5, "failed": 2, "suppressed": 1, "unknown": 1}
	for k, v := range want {
		if s.ByState[k] != v {
			t.Errorf("by_state[%s] = %d; want %d", k, s.ByState[k], v)
		}
	}
	// lookup has two attempts; every other intent one.
	if s.Records != fixtureSize || s.Attempts != fixtureSize+1 || s.Expired != 1 || s.ByTool["charge"] != 3 ||
		s.SizeBytes != fi.Size() || s.Oldest == nil || !s.Oldest.Equal(t0) || !s.Newest.Equal(t0.Add((fixtureSize-1)*time.Minute)) {
		t.Errorf("stats = %+v; want %d records, %d attempts, 1 expired, 3 charge, size %d", s, fixtureSize, fixtureSize+1, fi.Size())
	}
}

func TestStatsGolden(t *testing.T) {
	fx := buildFixture(t)
	r := agentctl(t, true, "stats", "--journal", fx.path)
	if r.code != 0 {
		t.Fatalf("stats = %d, %s", r.code, r.stderr)
	}
	// The path and the file's size vary from run to run.
	fi, err := os.Stat(fx.path)
	if err != nil {
		t.Fatal(err)
	}
	out := strings.Replace(r.stdout, fx.path, "JOURNAL", 1)
	out = strings.Replace(out, "size      "+humanBytes(fi.Size())+"\n", "size      SIZE\n", 1)
	golden(t, "stats", out)

	r = agentctl(t, false, "stats", "--journal", fx.path)
	if !strings.Contains(r.stdout, "records\t13\n") || !strings.Contains(r.stdout, "state.pending\t4\n") || !strings.Contains(r.stdout, "tool.charge\t3\n") {
		t.Errorf("stats (tab-separated) = %q", r.stdout)
	}
}

// stats --scan recounts by reading every record: it agrees with the
// counters of a sound journal, and tells the truth when a counter was
// changed on disk.
func TestStatsScan(t *testing.T) {
	fx := buildFixture(t)
	counted := agentctl(t, false, "stats", "--journal", fx.path, "--json")
	scanned := agentctl(t, false, "stats", "--journal", fx.path, "--json", "--scan")
	if counted.code != 0 || scanned.code != 0 {
		t.Fatalf("stats = %d, %s; stats --scan = %d, %s", counted.code, counted.stderr, scanned.code, scanned.stderr)
	}
	if counted.stdout != scanned.stdout {
		t.Errorf("stats --json = %s\nstats --json --scan = %s; want the same", counted.stdout, scanned.stdout)
	}

	db, err := bolt.Open(fx.path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		// A tool that has no record, counted with 999 - fixtureSize
		// succeeded ones: six uvarints, by state and then attempts.
		var v []byte
		for _, n := range []uint64{0, 999 - fixtureSize, 0, 0, 0, 0} {
			v = binary.AppendUvarint(v, n)
		}
		return tx.Bucket([]byte("counts")).Put([]byte("tghost"), v)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		scan bool
		want int
	}{{false, 999}, {true, fixtureSize}} {
		args := []string{"stats", "--journal", fx.path, "--json"}
		if c.scan {
			args = append(args, "--scan")
		}
		r := agentctl(t, false, args...)
		var s statsJSON
		if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || s.Records != c.want {
			t.Errorf("stats --scan=%v on a journal whose counters say 999: records %d (%v); want %d", c.scan, s.Records, err, c.want)
		}
	}
}
