// Reading bbolt's meta pages ourselves, before bbolt maps the file. bbolt
// trusts the file's length and faults or panics when a truncated file's
// pages are missing, sometimes inside bbolt.Open where a recover would leave
// the file locked; checking the length against the newest valid meta page
// first keeps a truncated journal a plain ErrCorrupt.

package bolt

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"os"

	"github.com/agentonce/agentonce/journal"
)

// bbolt's meta page, as it lays it out after the 16-byte page header (in
// the host's byte order): magic, version, page size, flags, root bucket
// (16 bytes), freelist page, high-water page id, txid, checksum. The
// checksum is FNV-64a of the fields before it.
const (
	boltMagic        = 0xED0CDAED
	boltPageHeader   = 16
	boltMetaPgidOff  = 40
	boltMetaTxidOff  = 48
	boltMetaSumOff   = 56
	boltMetaSize     = 64
	boltMinReadBytes = boltPageHeader + boltMetaSize
)

type boltMeta struct {
	pageSize, pgid, txid uint64
}

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
	return boltMeta{pageSize: uint64(ne.Uint32(m[8:])), pgid: ne.Uint64(m[boltMetaPgidOff:]), txid: ne.Uint64(m[boltMetaTxidOff:])}, true
}

// checkBoltSize refuses a file shorter than its newest valid meta page
// says it is. bbolt maps such a file and faults (or panics) reading the
// missing pages, some of them inside bbolt.Open, where a recover would leave
// the file locked; reading the meta pages first keeps a truncated journal a
// plain error. Files without a valid meta page are left to bbolt.Open.
func checkBoltSize(path string) error {
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
	if found && best.pageSize > 0 && best.pageSize < 1<<20 {
		if _, err := f.ReadAt(buf, int64(best.pageSize)); err == nil {
			if m, ok := parseBoltMeta(buf); ok && m.txid > best.txid {
				best = m
			}
		}
	}
	if !found {
		return nil
	}
	if need := best.pgid * best.pageSize; uint64(fi.Size()) < need {
		return fmt.Errorf("journal %s: %w: truncated: %d bytes, the journal needs %d", path, journal.ErrCorrupt, fi.Size(), need)
	}
	return nil
}
