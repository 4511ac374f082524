// Reading bbolt's meta pages ourselves, before bbolt maps the file: bbolt
// trusts the file's length and its freelist page, and faults or panics,
// some of it inside bbolt.Open, when they are wrong.

package bolt

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"

	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
)

// bbolt's meta page, as it lays it out after the 16-byte page header (in
// the host's byte order): magic, version, page size, flags, root bucket
// (16 bytes), freelist page, high-water page id, txid, checksum. The
// checksum is FNV-64a of the fields before it.
const (
	boltMagic        = 0xED0CDAED
	boltPageHeader   = 16
	boltMetaFreeOff  = 32
	boltMetaPgidOff  = 40
	boltMetaTxidOff  = 48
	boltMetaSumOff   = 56
	boltMetaSize     = 64
	boltMinReadBytes = boltPageHeader + boltMetaSize
)

type boltMeta struct {
	pageSize, freelist, pgid, txid uint64
}

// bbolt's freelist page type, and the freelist page id of a file that
// keeps no freelist (NoFreelistSync).
const (
	boltFreelistFlag = 0x10
	boltNoFreelist   = ^uint64(0)
)

func parseBoltMeta(b []byte) (boltMeta, bool) {
	if len(b) < boltMinReadBytes {
		return boltMeta{}, false
	}
	m := b[boltPageHeader : boltPageHeader+boltMetaSize]
	ne := binary.NativeEndian
	if ne.Uint32(m[0:]) != boltMagic {
		return boltMeta{}, false
	}
	h := fnv.New64a()
	h.Write(m[:boltMetaSumOff])
	if h.Sum64() != ne.Uint64(m[boltMetaSumOff:]) {
		return boltMeta{}, false
	}
	return boltMeta{pageSize: uint64(ne.Uint32(m[8:])), freelist: ne.Uint64(m[boltMetaFreeOff:]), pgid: ne.Uint64(m[boltMetaPgidOff:]), txid: ne.Uint64(m[boltMetaTxidOff:])}, true
}

// openBolt opens path with bbolt after checkBoltFile, and turns a panic
// or a fault inside bbolt.Open into ErrCorrupt, releasing the file's lock
// by hand (bbolt's mapping keeps it): else every later open in this
// process would be refused as in use.
func openBolt(path string, bo *bbolt.Options) (db *bbolt.DB, err error) {
	if err := checkBoltFile(path, !bo.ReadOnly && !testSkipFileCheck); err != nil {
		return nil, err
	}
	var file *os.File // bbolt's
	defer func() {
		if p := recover(); p != nil {
			if file != nil {
				unlockFile(file)
				_ = file.Close()
			}
			db, err = nil, fmt.Errorf("journal %s: %w: %v", path, journal.ErrCorrupt, p)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	o := *bo
	o.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		file = f
		return f, err
	}
	db, err = bbolt.Open(path, 0o600, &o)
	if err != nil {
		return nil, openError(path, err)
	}
	return db, nil
}

// testSkipFileCheck turns the freelist check off, for a test of the panic
// inside bbolt.Open that it prevents.
var testSkipFileCheck bool

// checkBoltFile refuses a file shorter than its newest valid meta page
// says it is and, with freelist, a file whose freelist page (which bbolt
// reads when it opens a file for writing) is not one. Files without a
// valid meta page are left to bbolt.Open.
func checkBoltFile(path string, freelist bool) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // bbolt.Open says what is wrong
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	buf := make([]byte, boltMinReadBytes)
	var best boltMeta
	found := false
	if _, err := f.ReadAt(buf, 0); err == nil || err == io.EOF {
		if m, ok := parseBoltMeta(buf); ok {
			best, found = m, true
		}
	}
	// The second meta page is one page in: at the first's page size, or,
	// when the first is damaged, at the sizes bbolt tries.
	sizes := []uint64{4096, uint64(os.Getpagesize())}
	if found {
		sizes = []uint64{best.pageSize}
	}
	for _, ps := range sizes {
		if ps == 0 || ps >= 1<<20 {
			continue
		}
		if _, err := f.ReadAt(buf, int64(ps)); err == nil {
			if m, ok := parseBoltMeta(buf); ok && (!found || m.txid > best.txid) {
				best, found = m, true
				break
			}
		}
	}
	if !found || best.pageSize == 0 || best.pageSize >= 1<<20 {
		return nil
	}
	size := uint64(fi.Size())
	if need := best.pgid * best.pageSize; size < need {
		return fmt.Errorf("journal %s: %w: truncated: %d bytes, the journal needs %d", path, journal.ErrCorrupt, size, need)
	}
	if !freelist || best.freelist == boltNoFreelist {
		return nil
	}
	if err := checkFreelist(f, &best); err != nil {
		return fmt.Errorf("journal %s: %w: freelist page %d: %v", path, journal.ErrCorrupt, best.freelist, err)
	}
	return nil
}

// checkFreelist checks the freelist page m names as bbolt reads it: a
// page of the freelist type inside the file, whose ids fit in it and name
// pages past the meta pages and below the high-water mark.
func checkFreelist(f *os.File, m *boltMeta) error {
	if m.freelist < 2 || m.freelist >= m.pgid {
		return fmt.Errorf("outside the file's %d pages", m.pgid)
	}
	hdr := make([]byte, boltPageHeader+8)
	if _, err := f.ReadAt(hdr, int64(m.freelist*m.pageSize)); err != nil {
		return err
	}
	ne := binary.NativeEndian
	flags, count, overflow := ne.Uint16(hdr[8:]), uint64(ne.Uint16(hdr[10:])), uint64(ne.Uint32(hdr[12:]))
	if flags != boltFreelistFlag {
		return fmt.Errorf("the page's type is %#x, not a freelist's", flags)
	}
	if m.freelist+overflow >= m.pgid {
		return fmt.Errorf("its %d overflow pages run past the file's %d pages", overflow, m.pgid)
	}
	first := uint64(0)
	if count == 0xFFFF { // the count is the first id's slot
		count, first = ne.Uint64(hdr[boltPageHeader:]), 1
	}
	room := ((overflow+1)*m.pageSize - boltPageHeader) / 8
	if count > room-first {
		return fmt.Errorf("it lists %d pages and has room for %d", count, room-first)
	}
	ids := make([]byte, count*8)
	if _, err := f.ReadAt(ids, int64(m.freelist*m.pageSize+boltPageHeader+first*8)); err != nil {
		return err
	}
	for i := 0; i < len(ids); i += 8 {
		if id := ne.Uint64(ids[i:]); id < 2 || id >= m.pgid {
			return fmt.Errorf("it lists page %d, outside the file's %d pages", id, m.pgid)
		}
	}
	return nil
}
