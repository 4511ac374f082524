// Package powerloss is a FUSE file system for tests that loses what a power
// cut loses: every write not yet fsynced.
//
// Mount serves the files of a backing directory. A file's writes and size
// changes (write, truncate, O_TRUNC, growth by writing past the end) go to
// a volatile layer kept in memory per file, which every read sees; fsync or
// fdatasync of the file writes its layer to the backing file. PowerCut
// throws every layer away and fails every later operation with EIO, as a
// disk that lost power; the backing directory then holds exactly what was
// synced. CutAtSync cuts the power at the n-th fsync instead, to sweep a
// crash across every point where a program waits for the disk. Unmount
// without a cut is a clean shutdown and writes the layers out.
//
// Metadata is durable at once: creating, renaming and removing files and
// directories, and mode, owner and times, go to the backing directory when
// they happen. A real file system needs an fsync of the directory for
// that; this one is kinder there and strict about contents, which is where
// a database such as bbolt keeps its promises. bbolt needs: its file's
// writes to stay invisible to a reader after the cut until fdatasync (they
// are), fdatasync to make them durable (it does), and its read-only mmap to
// see what it wrote (files are opened without FOPEN_DIRECT_IO, so the
// kernel's page cache serves the map, filled from the volatile layer).
// Locks (flock) are kept by the kernel on the mount, so a second process
// on the same mount sees bbolt's lock.
//
// A cut drops every unsynced write; a real disk may keep any subset of
// them. Software that survives this cut may still be broken by a disk that
// reorders or tears writes.
//
// # Caveats
//
// The process that serves a mount must not mmap its files: a page fault on
// the mount waits for the server's goroutines, which the Go runtime may
// have stopped for a garbage collection that waits for the faulting
// thread. Run whatever maps the files (bbolt) in another process, as the
// tests do. Plain read and write system calls from the serving process are
// fine.
//
// Only regular files and directories are served; hard links, symbolic
// links, extended attributes, fallocate and copy_file_range are refused
// with ENOTSUP. Mounting needs /dev/fuse and root (or fusermount3); Mount
// returns an error wrapping ErrUnavailable without them.
package powerloss
