package powerloss

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSyncedWriteSurvivesCut: what was written before fsync survives a
// cut; what was written after it is lost; reads before the cut see both.
func TestSyncedWriteSurvivesCut(t *testing.T) {
	m := mount(t)
	f, err := os.Create(filepath.Join(m.Dir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("durable"); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(" volatile"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(m.Dir(), "f")); string(got) != "durable volatile" {
		t.Errorf("read before the cut = %q; want %q", got, "durable volatile")
	}
	if got := readFile(t, filepath.Join(m.Backing(), "f")); string(got) != "durable" {
		t.Errorf("backing file before the cut = %q; want %q", got, "durable")
	}
	if m.Syncs() != 1 {
		t.Errorf("Syncs() = %d; want 1", m.Syncs())
	}
	m.PowerCut()
	if _, err := f.WriteString(" more"); !errors.Is(err, syscall.EIO) {
		t.Errorf("write after the cut = %v; want EIO", err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Errorf("fsync after the cut = %v; want EIO", err)
	}
	if _, err := os.ReadFile(filepath.Join(m.Dir(), "f")); !errors.Is(err, syscall.EIO) {
		t.Errorf("read after the cut = %v; want EIO", err)
	}
	f.Close()
	if err := m.Unmount(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(m.Backing(), "f")); string(got) != "durable" {
		t.Errorf("backing file after the cut = %q; want %q", got, "durable")
	}
}

// TestUnsyncedWriteLost: a file written and closed without fsync keeps
// its name (creation is durable) but not its contents.
func TestUnsyncedWriteLost(t *testing.T) {
	m := mount(t)
	if err := os.WriteFile(filepath.Join(m.Dir(), "f"), []byte("never synced"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(m.Dir(), "f")); string(got) != "never synced" {
		t.Errorf("read after close = %q; want %q", got, "never synced")
	}
	m.PowerCut()
	if err := m.Unmount(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(m.Backing(), "f")); len(got) != 0 {
		t.Errorf("backing file after the cut = %q; want it empty", got)
	}
}

// TestCleanUnmountWritesBack: without a cut, unsynced writes reach the
// backing file at Unmount, so a loss in the other tests is the cut's.
func TestCleanUnmountWritesBack(t *testing.T) {
	m := mount(t)
	if err := os.WriteFile(filepath.Join(m.Dir(), "f"), []byte("written back"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := m.Unmount(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(m.Backing(), "f")); string(got) != "written back" {
		t.Errorf("backing file after a clean unmount = %q; want %q", got, "written back")
	}
}

// TestTruncateIsVolatile: a truncation is a size change, lost in a cut
// unless synced; growing again reads zeros, not the old bytes.
func TestTruncateIsVolatile(t *testing.T) {
	m := mount(t)
	old := bytes.Repeat([]byte("0123456789"), 1000)
	if err := os.WriteFile(filepath.Join(m.Backing(), "f"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(m.Dir(), "f")
	if err := os.Truncate(path, 100); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 5000); err != nil {
		t.Fatal(err)
	}
	want := append(bytes.Clone(old[:100]), make([]byte, 4900)...)
	if got := readFile(t, path); !bytes.Equal(got, want) {
		t.Errorf("read after truncate to 100 and growth to 5000: %d bytes, equal to the old prefix and zeros: %v", len(got), bytes.Equal(got, want))
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() != 5000 {
		t.Errorf("Stat(%s) = %v, %v; want size 5000", path, fi, err)
	}
	m.PowerCut()
	if err := m.Unmount(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(m.Backing(), "f")); !bytes.Equal(got, old) {
		t.Errorf("backing file after the cut has %d bytes; want the %d it had", len(got), len(old))
	}
}

// TestReadAfterWrite writes and truncates at random through the mount,
// reads everything back through it, and after fsync finds the same bytes
// in the backing file.
func TestReadAfterWrite(t *testing.T) {
	m := mount(t)
	rng := rand.New(rand.NewPCG(7, 7))
	path := filepath.Join(m.Dir(), "f")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var model []byte
	for op := range 200 {
		if rng.IntN(10) == 0 {
			size := rng.IntN(20000)
			if err := f.Truncate(int64(size)); err != nil {
				t.Fatal(err)
			}
			if size < len(model) {
				model = model[:size]
			} else {
				model = append(model, make([]byte, size-len(model))...)
			}
			continue
		}
		off := rng.IntN(20000)
		p := make([]byte, rng.IntN(9000)+1)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		if _, err := f.WriteAt(p, int64(off)); err != nil {
			t.Fatalf("op %d: WriteAt(%d bytes, %d) = %v", op, len(p), off, err)
		}
		if end := off + len(p); end > len(model) {
			model = append(model, make([]byte, end-len(model))...)
		}
		copy(model[off:], p)
		if got := readFile(t, path); !bytes.Equal(got, model) {
			t.Fatalf("op %d: read %d bytes through the mount; want the model's %d", op, len(got), len(model))
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(m.Backing(), "f")); !bytes.Equal(got, model) {
		t.Fatalf("backing file after fsync has %d bytes; want the model's %d", len(got), len(model))
	}
}

// TestMetadataIsDurable: names made by create, mkdir and rename survive a
// cut, and a synced file keeps its contents under its new name.
func TestMetadataIsDurable(t *testing.T) {
	m := mount(t)
	if err := os.Mkdir(filepath.Join(m.Dir(), "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(m.Dir(), "d", "a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("synced"); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(" lost"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Rename(filepath.Join(m.Dir(), "d", "a"), filepath.Join(m.Dir(), "b")); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(m.Dir(), "b")); string(got) != "synced lost" {
		t.Errorf("read after rename = %q; want %q", got, "synced lost")
	}
	ents, err := os.ReadDir(m.Dir())
	if err != nil || len(ents) != 2 {
		t.Errorf("ReadDir(mount) = %v, %v; want d and b", ents, err)
	}
	m.PowerCut()
	if err := m.Unmount(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(m.Backing(), "b")); string(got) != "synced" {
		t.Errorf("renamed file after the cut = %q; want %q", got, "synced")
	}
	if _, err := os.Stat(filepath.Join(m.Backing(), "d")); err != nil {
		t.Errorf("directory after the cut: %v", err)
	}
}

// TestMountWithoutFUSE: a machine without /dev/fuse gets ErrUnavailable,
// which the tests skip on, with a message saying what to install.
func TestMountWithoutFUSE(t *testing.T) {
	defer func(dev string) { fuseDevice = dev }(fuseDevice)
	fuseDevice = filepath.Join(t.TempDir(), "fuse")
	m, err := Mount(t.TempDir(), t.TempDir())
	if !errors.Is(err, ErrUnavailable) {
		if m != nil {
			m.Unmount()
		}
		t.Fatalf("Mount without a FUSE device = %v; want ErrUnavailable", err)
	}
	for _, want := range []string{"powerloss: /dev/fuse not available: install fuse3", fuseDevice} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Mount without a FUSE device: %q; want it to say %q", err, want)
		}
	}
}

// TestCutAtSync: the chosen fsync cuts the power instead of syncing; the
// syncs before it made their writes durable.
func TestCutAtSync(t *testing.T) {
	m := mount(t)
	m.CutAtSync(2)
	f, err := os.Create(filepath.Join(m.Dir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("first"); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("first fsync = %v; want success", err)
	}
	if m.Cut() {
		t.Fatalf("Cut() after the first fsync = true; want false")
	}
	if _, err := f.WriteString(" second"); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Errorf("second fsync = %v; want EIO", err)
	}
	if !m.Cut() {
		t.Errorf("Cut() after the second fsync = false; want true")
	}
	if _, err := f.WriteString(" third"); !errors.Is(err, syscall.EIO) {
		t.Errorf("write after the cut = %v; want EIO", err)
	}
	// Until PowerCut the dying process still sees what it wrote.
	if got := readFile(t, filepath.Join(m.Dir(), "f")); string(got) != "first second" {
		t.Errorf("read after the cut = %q; want %q", got, "first second")
	}
	f.Close()
	m.PowerCut()
	if err := m.Unmount(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(m.Backing(), "f")); string(got) != "first" {
		t.Errorf("backing file after a cut at the second fsync = %q; want %q", got, "first")
	}
}
