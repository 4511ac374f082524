package powerloss

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

const boltChildEnv = "POWERLOSS_BOLT_CHILD" // the database's path, in a child

// TestBoltChild is the process TestBoltOnMount starts: bbolt maps its file,
// so it must not run in the process that serves the mount (see the package
// doc). It commits "synced" with bbolt's fdatasync and "unsynced" with
// NoSync, reads both back through its mmap, reports, and waits to die.
func TestBoltChild(t *testing.T) {
	path := os.Getenv(boltChildEnv)
	if path == "" {
		t.Skip("helper process for TestBoltOnMount")
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		fail("open: %v", err)
	}
	put := func(k string) {
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			return b.Put([]byte(k), []byte("value of "+k))
		})
		if err != nil {
			fail("put %s: %v", k, err)
		}
	}
	put("synced")
	db.NoSync = true
	put("unsynced")
	var seen []string
	err = db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("b")).ForEach(func(k, v []byte) error {
			if string(v) != "value of "+string(k) {
				fail("read %s = %q", k, v)
			}
			seen = append(seen, string(k))
			return nil
		})
	})
	if err != nil {
		fail("view: %v", err)
	}
	report("seen %v", seen)
	block()
}

// TestBoltOnMount: bbolt works on the mount, and after a cut the data it
// committed with fdatasync survives while the commit made with NoSync is
// lost: the file system really drops unsynced writes.
func TestBoltOnMount(t *testing.T) {
	m := mount(t)
	c := startChild(t, "TestBoltChild", boltChildEnv+"="+filepath.Join(m.Dir(), "bolt.db"))
	if got, want := c.next(), "seen [synced unsynced]"; got != want {
		t.Fatalf("child: %s; want %s", got, want)
	}
	m.PowerCut()
	c.kill()
	if err := m.Unmount(); err != nil {
		t.Fatal(err)
	}
	if m.Syncs() == 0 {
		t.Errorf("Syncs() = 0; bbolt's fdatasync never reached the mount")
	}

	db, err := bolt.Open(filepath.Join(m.Backing(), "bolt.db"), 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatalf("open the backing file after the cut: %v", err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("b"))
		if b == nil {
			t.Fatalf("bucket of the synced commit is missing after the cut")
		}
		if got := b.Get([]byte("synced")); string(got) != "value of synced" {
			t.Errorf("Get(synced) after the cut = %q; want %q", got, "value of synced")
		}
		if got := b.Get([]byte("unsynced")); got != nil {
			t.Errorf("Get(unsynced) after the cut = %q; want nil (committed with NoSync)", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
