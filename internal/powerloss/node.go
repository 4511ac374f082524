package powerloss

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// node is a file or directory of the mount. Only the operations below are
// served; go-fuse answers the others (links, symlinks, extended
// attributes, fallocate, copy_file_range) itself, mostly with ENOTSUP, so
// nothing reaches a backing file around the volatile layer.
type node struct {
	fs.Inode
	fsys *FS
}

// handle is a file opened through the mount.
type handle struct{ st *fileState }

var (
	_ fs.NodeLookuper  = (*node)(nil)
	_ fs.NodeGetattrer = (*node)(nil)
	_ fs.NodeSetattrer = (*node)(nil)
	_ fs.NodeOpener    = (*node)(nil)
	_ fs.NodeCreater   = (*node)(nil)
	_ fs.NodeReader    = (*node)(nil)
	_ fs.NodeWriter    = (*node)(nil)
	_ fs.NodeFsyncer   = (*node)(nil)
	_ fs.NodeFlusher   = (*node)(nil)
	_ fs.NodeReleaser  = (*node)(nil)
	_ fs.NodeUnlinker  = (*node)(nil)
	_ fs.NodeRenamer   = (*node)(nil)
	_ fs.NodeLinker    = (*node)(nil)
	_ fs.NodeMkdirer   = (*node)(nil)
	_ fs.NodeRmdirer   = (*node)(nil)
	_ fs.NodeReaddirer = (*node)(nil)
	_ fs.NodeStatfser  = (*node)(nil)
)

// path returns the node's path in the backing directory.
func (n *node) path() string {
	return filepath.Join(n.fsys.backing, n.Path(nil))
}

// dead reports that the power is off: every operation fails.
func (n *node) dead() bool { return n.fsys.cut.Load() }

// frozen reports that the disk takes no more changes (the power is off, or
// was cut at a sync): operations that would change it fail.
func (n *node) frozen() bool { return n.fsys.cut.Load() || n.fsys.frozen.Load() }

// child makes the inode for the backing file st names and fills out.
func (n *node) child(ctx context.Context, st *syscall.Stat_t, out *fuse.EntryOut) *fs.Inode {
	ch := n.NewInode(ctx, &node{fsys: n.fsys}, fs.StableAttr{Mode: st.Mode & syscall.S_IFMT, Ino: st.Ino})
	n.fsys.attr(st, &out.Attr)
	return ch
}

// attr fills a from st, with the size readers see.
func (f *FS) attr(st *syscall.Stat_t, a *fuse.Attr) {
	a.FromStat(st)
	f.mu.Lock()
	fst := f.files[st.Ino]
	f.mu.Unlock()
	if fst == nil {
		return
	}
	fst.mu.Lock()
	if fst.vol != nil {
		a.Size = uint64(fst.vol.size)
		a.Blocks = (a.Size + 511) / 512
	}
	fst.mu.Unlock()
}

// Lookup finds name in the directory n.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.dead() {
		return nil, syscall.EIO
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(n.path(), name), &st); err != nil {
		return nil, fs.ToErrno(err)
	}
	return n.child(ctx, &st, out), 0
}

// Getattr reports the backing file's attributes with the size readers see.
func (n *node) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if n.dead() {
		return syscall.EIO
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(n.path(), &st); err != nil {
		return fs.ToErrno(err)
	}
	n.fsys.attr(&st, &out.Attr)
	return 0
}

// Setattr changes the size in the volatile layer; mode, owner and times
// go to the backing file at once (metadata is durable, see the package
// doc).
func (n *node) Setattr(ctx context.Context, _ fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if n.frozen() {
		return syscall.EIO
	}
	p := n.path()
	if size, ok := in.GetSize(); ok {
		st, errno := n.fsys.acquire(p)
		if errno != 0 {
			return errno
		}
		errno = st.truncate(int64(size))
		n.fsys.release(st)
		if errno != 0 {
			return errno
		}
	}
	if mode, ok := in.GetMode(); ok {
		if err := syscall.Chmod(p, mode); err != nil {
			return fs.ToErrno(err)
		}
	}
	uid, uok := in.GetUID()
	gid, gok := in.GetGID()
	if uok || gok {
		u, g := -1, -1
		if uok {
			u = int(uid)
		}
		if gok {
			g = int(gid)
		}
		if err := os.Lchown(p, u, g); err != nil {
			return fs.ToErrno(err)
		}
	}
	mtime, mok := in.GetMTime()
	atime, aok := in.GetATime()
	if mok || aok {
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
		if aok {
			ts[0] = unix.NsecToTimespec(atime.UnixNano())
		}
		if mok {
			ts[1] = unix.NsecToTimespec(mtime.UnixNano())
		}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fs.ToErrno(err)
		}
	}
	return n.Getattr(ctx, nil, out)
}

// Open opens the file; O_TRUNC truncates it in the volatile layer. Files
// are opened without FOPEN_DIRECT_IO, so the kernel's page cache serves
// mmap, filled by Read from the volatile layer.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if n.dead() {
		return nil, 0, syscall.EIO
	}
	st, errno := n.fsys.acquire(n.path())
	if errno != 0 {
		return nil, 0, errno
	}
	if flags&syscall.O_TRUNC != 0 {
		errno := syscall.EIO
		if !n.frozen() {
			errno = st.truncate(0)
		}
		if errno != 0 {
			n.fsys.release(st)
			return nil, 0, errno
		}
	}
	return &handle{st}, 0, 0
}

// Create creates the file in the backing directory at once (a new file's
// name is durable) and opens it.
func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if n.frozen() {
		return nil, nil, 0, syscall.EIO
	}
	p := filepath.Join(n.path(), name)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|int(flags&syscall.O_EXCL), os.FileMode(mode&0o7777))
	if err != nil {
		return nil, nil, 0, fs.ToErrno(err)
	}
	f.Close()
	st, errno := n.fsys.acquire(p)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if flags&syscall.O_TRUNC != 0 {
		if errno := st.truncate(0); errno != 0 {
			n.fsys.release(st)
			return nil, nil, 0, errno
		}
	}
	var sys syscall.Stat_t
	if err := syscall.Fstat(int(st.disk.Fd()), &sys); err != nil {
		n.fsys.release(st)
		return nil, nil, 0, fs.ToErrno(err)
	}
	return n.child(ctx, &sys, out), &handle{st}, 0, 0
}

// Read reads from the volatile layer over the backing file.
func (n *node) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if n.dead() {
		return nil, syscall.EIO
	}
	st := fh.(*handle).st
	st.mu.Lock()
	defer st.mu.Unlock()
	var k int
	var err error
	if st.vol != nil {
		k, err = st.vol.readAt(st.disk, dest, off)
	} else {
		k, err = st.disk.ReadAt(dest, off)
		if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(dest[:k]), 0
}

// Write writes into the volatile layer only.
func (n *node) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	if n.frozen() {
		return 0, syscall.EIO
	}
	st := fh.(*handle).st
	st.mu.Lock()
	defer st.mu.Unlock()
	if errno := st.ensureVolatile(); errno != 0 {
		return 0, errno
	}
	if err := st.vol.writeAt(st.disk, data, off); err != nil {
		return 0, fs.ToErrno(err)
	}
	return uint32(len(data)), 0
}

// Fsync writes the file's volatile layer to the backing file: from then
// on its contents survive a PowerCut. fsync and fdatasync are the same.
// A directory's fsync counts as a sync (a cut may fall on it) but has
// nothing to write: names are durable at once.
func (n *node) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	n.fsys.power.Lock()
	defer n.fsys.power.Unlock()
	if n.frozen() {
		return syscall.EIO
	}
	n.fsys.syncs.Add(1)
	if n.fsys.cutAtThisSync() {
		return syscall.EIO
	}
	h, ok := fh.(*handle)
	if !ok {
		return 0 // a directory
	}
	st := h.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.vol == nil {
		return 0
	}
	if err := st.vol.flush(st.disk); err != nil {
		return fs.ToErrno(err)
	}
	st.vol = nil
	return 0
}

// Flush is close(2): it makes nothing durable.
func (n *node) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	if n.dead() {
		return syscall.EIO
	}
	return 0
}

// Release closes a handle; unsynced writes stay volatile after the last
// one, as dirty pages outlive close(2).
func (n *node) Release(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	if h, ok := fh.(*handle); ok {
		n.fsys.release(h.st)
	}
	return 0
}

// Unlink removes the name in the backing directory at once.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	if n.frozen() {
		return syscall.EIO
	}
	p := filepath.Join(n.path(), name)
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return fs.ToErrno(err)
	}
	if err := syscall.Unlink(p); err != nil {
		return fs.ToErrno(err)
	}
	if st.Nlink <= 1 { // else another name still holds the file
		n.fsys.forget(st.Ino)
	}
	return 0
}

// Link makes a hard link in the backing directory at once (names are
// durable). Both names share the file's volatile layer, which is kept by
// inode.
func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.frozen() {
		return nil, syscall.EIO
	}
	t, ok := target.(*node)
	if !ok {
		return nil, syscall.EXDEV
	}
	p := filepath.Join(n.path(), name)
	if err := os.Link(t.path(), p); err != nil {
		return nil, fs.ToErrno(err)
	}
	var sys syscall.Stat_t
	if err := syscall.Lstat(p, &sys); err != nil {
		return nil, fs.ToErrno(err)
	}
	return n.child(ctx, &sys, out), 0
}

// Rename renames in the backing directory at once; a file's volatile
// layer goes with it.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if n.frozen() {
		return syscall.EIO
	}
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	to := filepath.Join(np.path(), newName)
	var replaced syscall.Stat_t
	replacedErr := syscall.Lstat(to, &replaced)
	if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(n.path(), name), unix.AT_FDCWD, to, uint(flags)); err != nil {
		return fs.ToErrno(err)
	}
	if replacedErr == nil && flags&unix.RENAME_EXCHANGE == 0 {
		n.fsys.forget(replaced.Ino)
	}
	return 0
}

// Mkdir makes a directory in the backing directory at once.
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.frozen() {
		return nil, syscall.EIO
	}
	p := filepath.Join(n.path(), name)
	if err := os.Mkdir(p, os.FileMode(mode&0o7777)); err != nil {
		return nil, fs.ToErrno(err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return nil, fs.ToErrno(err)
	}
	return n.child(ctx, &st, out), 0
}

// Rmdir removes a directory in the backing directory at once.
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	if n.frozen() {
		return syscall.EIO
	}
	return fs.ToErrno(syscall.Rmdir(filepath.Join(n.path(), name)))
}

// Readdir lists the backing directory.
func (n *node) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	if n.dead() {
		return nil, syscall.EIO
	}
	ents, err := os.ReadDir(n.path())
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	list := make([]fuse.DirEntry, 0, len(ents))
	for _, e := range ents {
		mode := uint32(syscall.S_IFREG)
		switch {
		case e.IsDir():
			mode = syscall.S_IFDIR
		case e.Type()&os.ModeSymlink != 0:
			mode = syscall.S_IFLNK
		}
		list = append(list, fuse.DirEntry{Name: e.Name(), Mode: mode})
	}
	return fs.NewListDirStream(list), 0
}

// Statfs reports the backing file system's figures.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	if n.dead() {
		return syscall.EIO
	}
	var s syscall.Statfs_t
	if err := syscall.Statfs(n.fsys.backing, &s); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStatfsT(&s)
	return 0
}

// acquire returns the state of the backing file at p with one more
// handle counted, opening the file if it is not open yet.
func (f *FS) acquire(p string) (*fileState, syscall.Errno) {
	disk, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	var sys syscall.Stat_t
	if err := syscall.Fstat(int(disk.Fd()), &sys); err != nil {
		disk.Close()
		return nil, fs.ToErrno(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.files[sys.Ino]
	if st == nil {
		st = &fileState{ino: sys.Ino, disk: disk}
		f.files[sys.Ino] = st
	} else {
		disk.Close()
	}
	st.mu.Lock()
	st.handles++
	st.mu.Unlock()
	return st, 0
}

// release drops a handle of st; the state goes once no handle is left and
// nothing is volatile.
func (f *FS) release(st *fileState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.handles--
	if st.handles == 0 && st.vol == nil {
		f.drop(st)
	}
}

// forget drops the state of a backing file whose name was removed, unless
// it is still open.
func (f *FS) forget(ino uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.files[ino]
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.handles == 0 {
		f.drop(st)
	}
}

// drop closes st's backing file and forgets st. f.mu and st.mu are held.
func (f *FS) drop(st *fileState) {
	delete(f.files, st.ino)
	st.disk.Close()
}

// truncate sets the file's size in the volatile layer.
func (st *fileState) truncate(size int64) syscall.Errno {
	st.mu.Lock()
	defer st.mu.Unlock()
	if errno := st.ensureVolatile(); errno != 0 {
		return errno
	}
	st.vol.truncate(size)
	return 0
}

// ensureVolatile starts a volatile layer over the backing file. st.mu is
// held.
func (st *fileState) ensureVolatile() syscall.Errno {
	if st.vol != nil {
		return 0
	}
	fi, err := st.disk.Stat()
	if err != nil {
		return fs.ToErrno(err)
	}
	st.vol = newVolatile(fi.Size())
	return 0
}
