package powerloss

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FS is a mounted power-loss file system. Its methods are safe for
// concurrent use.
type FS struct {
	dir     string // the mount point
	backing string // the directory that holds the files
	server  *fuse.Server
	root    *node
	cut     atomic.Bool // PowerCut: every operation fails
	frozen  atomic.Bool // a cut at a sync: changes fail, reads see the frozen state
	syncs   atomic.Int64
	// cutAt counts down the fsyncs before the one that cuts the power
	// (CutAtSync); zero or less means none does.
	cutAt atomic.Int64
	// power is held by each sync and each cut, so that a cut falls
	// between two syncs, never inside one.
	power sync.Mutex

	mu sync.Mutex
	// files holds the state of every file open through the mount or
	// holding unsynced writes, by backing inode number. Guarded by mu;
	// lock mu before a fileState's mu.
	files map[uint64]*fileState
	// unmounted is set by Unmount. Guarded by mu.
	unmounted bool
}

// fileState is one backing file as the mount serves it.
type fileState struct {
	ino uint64 // the backing file's inode number, its key in FS.files
	mu  sync.Mutex
	// disk is the backing file, open while handles > 0 or vol != nil.
	// Guarded by mu.
	disk *os.File
	// handles counts the file's handles open through the mount. Guarded
	// by mu and FS.mu (both held to change it).
	handles int
	// vol is the file's writes since its last fsync; nil when the file is
	// as on disk. Guarded by mu.
	vol *volatile
}

// Mount mounts a power-loss file system on dir, an empty directory, that
// serves the files of the directory backing. It returns an error wrapping
// ErrUnavailable when the machine cannot mount FUSE file systems.
func Mount(dir, backing string) (*FS, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	backing, err = filepath.Abs(backing)
	if err != nil {
		return nil, err
	}
	if err := checkFUSE(); err != nil {
		return nil, err
	}
	f := &FS{dir: dir, backing: backing, files: make(map[uint64]*fileState)}
	f.root = &node{fsys: f}
	opts := &fs.Options{MountOptions: fuse.MountOptions{
		FsName: "powerloss",
		Name:   "powerloss",
		// As root, mount(2) itself: its errors say whether it was refused.
		DirectMountStrict: os.Geteuid() == 0,
	}}
	server, err := fs.Mount(dir, f.root, opts)
	if err != nil {
		var errno syscall.Errno
		if os.Geteuid() != 0 || errors.As(err, &errno) && (errno == syscall.EPERM || errno == syscall.EACCES) {
			// Without root only fusermount could mount, and it says no more
			// than that it failed.
			return nil, fmt.Errorf("powerloss: mount %s: %w: %v", dir, ErrUnavailable, err)
		}
		return nil, fmt.Errorf("powerloss: mount %s: %w", dir, err)
	}
	f.server = server
	return f, nil
}

// fuseDevice is the FUSE device; a test seam.
var fuseDevice = "/dev/fuse"

// checkFUSE returns an error wrapping ErrUnavailable when /dev/fuse cannot
// be opened, or the process is not root and has no fusermount.
func checkFUSE() error {
	dev, err := os.OpenFile(fuseDevice, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("powerloss: %w: %v", ErrUnavailable, err)
	}
	dev.Close()
	if os.Geteuid() == 0 {
		return nil
	}
	for _, bin := range []string{"fusermount3", "fusermount"} {
		if _, err := exec.LookPath(bin); err == nil {
			return nil
		}
	}
	return fmt.Errorf("powerloss: %w: not root and no fusermount3 in PATH", ErrUnavailable)
}

// Dir returns the mount point.
func (f *FS) Dir() string { return f.dir }

// Backing returns the directory whose files the mount serves: after
// PowerCut it holds what survived.
func (f *FS) Backing() string { return f.backing }

// Syncs counts the fsync and fdatasync calls that reached the mount before
// a cut, the one that cut included.
func (f *FS) Syncs() int { return int(f.syncs.Load()) }

// PowerCut discards every write and size change not yet fsynced, as a
// power cut would, and makes every later operation on the mount fail with
// EIO. The kernel's cached pages of the mount's files are dropped too, so
// that reads (and faults of mapped pages) reach the file system and fail.
// A process that still uses the mount sees it as a dead disk; Unmount it
// once they are gone.
func (f *FS) PowerCut() {
	if f.cutPower() {
		invalidate(&f.root.Inode)
	}
}

// CutAtSync makes the n-th fsync or fdatasync from now on (n >= 1) cut the
// power instead of syncing: that call and every later change (write,
// truncate, create, rename, remove) fail with EIO, and nothing of what the
// sync would have made durable is. It sweeps a crash across every point
// where a program waits for the disk. n <= 0 cancels.
//
// Until PowerCut, reads still see the files as they were at the cut,
// unsynced writes included, as a process about to die still sees its page
// cache; so the process that hit the cut goes on through its error paths
// rather than faulting on a mapped page. Kill it, then call PowerCut: what
// survives is what was synced before the cut.
func (f *FS) CutAtSync(n int) { f.cutAt.Store(int64(n)) }

// Cut reports whether the power was cut (by PowerCut or CutAtSync).
func (f *FS) Cut() bool { return f.cut.Load() || f.frozen.Load() }

// cutAtThisSync counts a sync down and reports whether it is the one that
// cuts the power.
func (f *FS) cutAtThisSync() bool {
	for {
		left := f.cutAt.Load()
		if left <= 0 {
			return false
		}
		if !f.cutAt.CompareAndSwap(left, left-1) {
			continue
		}
		if left > 1 {
			return false
		}
		f.frozen.Store(true)
		return true
	}
}

// cutPower discards the volatile layers and fails every later operation.
// It reports false if the power was already cut.
func (f *FS) cutPower() bool {
	f.power.Lock()
	defer f.power.Unlock()
	if f.cut.Swap(true) {
		return false
	}
	f.mu.Lock()
	for _, st := range f.files {
		st.mu.Lock()
		st.vol = nil
		st.mu.Unlock()
	}
	f.mu.Unlock()
	return true
}

// invalidate drops the kernel's cached pages and attributes of the files
// under in. It is best effort: a file the kernel has forgotten has none.
func invalidate(in *fs.Inode) {
	for _, ch := range in.Children() {
		if ch.IsDir() {
			invalidate(ch)
		} else {
			ch.NotifyContent(0, 0)
		}
	}
}

// Unmount unmounts the file system; every process must have closed its
// files on it. Without a cut before, it is a clean shutdown: the writes not
// yet fsynced are written out, as the kernel writes back dirty pages when
// a disk is unmounted. After a cut they are discarded.
func (f *FS) Unmount() error {
	if err := f.server.Unmount(); err != nil {
		return fmt.Errorf("powerloss: unmount %s: %w", f.dir, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unmounted {
		return nil
	}
	f.unmounted = true
	var errs []error
	for ino, st := range f.files {
		if st.vol != nil && !f.Cut() {
			if err := st.vol.flush(st.disk); err != nil {
				errs = append(errs, fmt.Errorf("powerloss: write back %s: %w", st.disk.Name(), err))
			}
			st.vol = nil
		}
		st.disk.Close()
		delete(f.files, ino)
	}
	return errors.Join(errs...)
}
