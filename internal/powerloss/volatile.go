package powerloss

import (
	"errors"
	"io"
	"maps"
	"slices"
)

// pageSize is the granularity of the volatile layer, the kernel's page.
const pageSize = 4096

// volatile is what a file's writes and size changes since its last fsync
// did: the contents readers see, which a power cut throws away. The file
// on disk (the backing file) is untouched until flush.
type volatile struct {
	// size is the file's size as readers see it.
	size int64
	// floor is where the backing file's bytes stop counting: bytes of the
	// backing file at or past floor read as zeros, because the file was
	// truncated below them. floor <= size.
	floor int64
	// pages holds the pages written since the last flush, by page number,
	// each pageSize bytes with zeros past size.
	pages map[int64][]byte
}

// newVolatile returns an empty layer over a backing file of size bytes.
func newVolatile(size int64) *volatile {
	return &volatile{size: size, floor: size, pages: make(map[int64][]byte)}
}

// readAt reads into p at off as readers see the file, backing bytes from
// disk, and returns how many bytes it read: fewer than len(p) only at the
// end of the file.
func (v *volatile) readAt(disk io.ReaderAt, p []byte, off int64) (int, error) {
	if off >= v.size {
		return 0, nil
	}
	p = p[:min(int64(len(p)), v.size-off)]
	for done := 0; done < len(p); {
		pos := off + int64(done)
		n, in := pageOf(pos)
		chunk := p[done:min(len(p), done+pageSize-in)]
		if page, ok := v.pages[n]; ok {
			copy(chunk, page[in:])
		} else if err := v.readDisk(disk, chunk, pos); err != nil {
			return done, err
		}
		done += len(chunk)
	}
	return len(p), nil
}

// readDisk fills p with the backing file's bytes at off, zeros past floor
// or past the backing file's end.
func (v *volatile) readDisk(disk io.ReaderAt, p []byte, off int64) error {
	clear(p)
	if off >= v.floor {
		return nil
	}
	_, err := disk.ReadAt(p[:min(int64(len(p)), v.floor-off)], off)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

// writeAt writes p at off, growing the file if it ends past size.
func (v *volatile) writeAt(disk io.ReaderAt, p []byte, off int64) error {
	for done := 0; done < len(p); {
		pos := off + int64(done)
		n, in := pageOf(pos)
		page, ok := v.pages[n]
		if !ok {
			page = make([]byte, pageSize)
			// A page written in part keeps the rest of what readers saw.
			if err := v.readDisk(disk, page[:min(int64(pageSize), max(0, v.size-n*pageSize))], n*pageSize); err != nil {
				return err
			}
			v.pages[n] = page
		}
		done += copy(page[in:], p[done:])
	}
	v.size = max(v.size, off+int64(len(p)))
	return nil
}

// truncate sets the file's size; bytes past the old size read as zeros.
func (v *volatile) truncate(size int64) {
	if size < v.size {
		for n, page := range v.pages {
			switch start := n * pageSize; {
			case start >= size:
				delete(v.pages, n)
			case start+pageSize > size:
				clear(page[size-start:])
			}
		}
		v.floor = min(v.floor, size)
	}
	v.size = size
}

// file is what flush writes to: the backing file.
type file interface {
	io.WriterAt
	Truncate(size int64) error
}

// flush writes the layer to the backing file, which then holds what
// readers saw. The layer must not be used afterwards.
func (v *volatile) flush(disk file) error {
	// Cutting at floor first zeroes what a truncation removed and a later
	// growth left unwritten.
	if err := disk.Truncate(v.floor); err != nil {
		return err
	}
	for _, n := range slices.Sorted(maps.Keys(v.pages)) {
		page := v.pages[n]
		start := n * pageSize
		if _, err := disk.WriteAt(page[:min(int64(pageSize), v.size-start)], start); err != nil {
			return err
		}
	}
	return disk.Truncate(v.size)
}

// pageOf returns the page number holding byte off and off's place in it.
func pageOf(off int64) (n int64, in int) {
	return off / pageSize, int(off % pageSize)
}
