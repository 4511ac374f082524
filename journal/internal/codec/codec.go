// Package codec is the binary form of a journal record, one value per
// record, as the bbolt file, its pending log, the Redis store and the
// in-memory store keep it. What it promises:
//
//   - Forward compatibility: a reader skips tags it does not know; a newer
//     format byte, which may change what known tags mean, is refused with
//     journal.ErrNewerVersion.
//   - Exact times: to the nanosecond, in UTC, absent when zero.
//   - Few allocations: decoding copies the value once and points every
//     string and byte slice into that copy: at most three allocations (the
//     copy, the attempts, the resolution; more past four attempts).
//   - Integrity: every record written is sealed with a CRC-32C; a damaged
//     one decodes to an error wrapping journal.ErrCorrupt, never a panic.
package codec

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"time"
	"unsafe"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

// The record encoding: one format byte (the schema version), then fields,
// each a uvarint tag, a uvarint length and the payload. Integers are
// uvarints, times zig-zag varints of Unix nanoseconds, strings and byte
// slices raw. An absent byte slice decodes as nil, a present empty one as
// empty.
const (
	tagKey = iota + 1
	tagTenant
	tagSession
	tagTurn
	tagTool
	tagDiscriminator
	tagFingerprint
	tagEffect
	tagInput
	tagState
	tagOutput
	tagErrorClass
	tagErrorMessage
	tagAttempt
	tagLeaseOwner
	tagLeaseToken
	tagLeaseExpires
	tagResolution
	tagCreated
	tagUpdated
	tagExpires
	tagApproval
)

// Sub-tags of tagAttempt and tagResolution.
const (
	tagAttemptID = iota + 1
	tagAttemptStart
	tagAttemptEnd
	tagAttemptClass
	tagAttemptError
	tagAttemptQuietAt
)

const (
	tagResState = iota + 1
	tagResOutput
	tagResReason
	tagResBy
	tagResAt
	tagResFingerprint
)

// Sub-tags of tagApproval; each tagApGiven holds a resolution's fields.
const (
	tagApNeed = iota + 1
	tagApDeadline
	tagApGiven
)

type encoder struct{ b []byte }

func (e *encoder) head(tag, n int) {
	e.b = binary.AppendUvarint(e.b, uint64(tag))
	e.b = binary.AppendUvarint(e.b, uint64(n))
}

func (e *encoder) str(tag int, s string) {
	if s == "" {
		return
	}
	e.head(tag, len(s))
	e.b = append(e.b, s...)
}

func (e *encoder) bytes(tag int, p []byte) {
	if p == nil {
		return
	}
	e.head(tag, len(p))
	e.b = append(e.b, p...)
}

func (e *encoder) uint(tag int, v uint64) {
	if v == 0 {
		return
	}
	var tmp [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(tmp[:], v)
	e.head(tag, n)
	e.b = append(e.b, tmp[:n]...)
}

func (e *encoder) time(tag int, t time.Time) {
	if t.IsZero() {
		return
	}
	var tmp [binary.MaxVarintLen64]byte
	n := binary.PutVarint(tmp[:], t.UnixNano())
	e.head(tag, n)
	e.b = append(e.b, tmp[:n]...)
}

// open begins a nested message under tag, in place: its fields follow a
// one-byte length, which end fills in (and widens for 128 bytes or more).
// Not a closure-taking method: the encoder would escape, an allocation.
func (e *encoder) open(tag int) (at int) {
	e.b = binary.AppendUvarint(e.b, uint64(tag))
	at = len(e.b)
	e.b = append(e.b, 0)
	return at
}

// end ends the nested message that open began at at.
func (e *encoder) end(at int) {
	n := len(e.b) - at - 1
	if n < 0x80 {
		e.b[at] = byte(n)
		return
	}
	var tmp [binary.MaxVarintLen64]byte
	w := binary.PutUvarint(tmp[:], uint64(n))
	e.b = append(e.b, tmp[:w-1]...)
	copy(e.b[at+w:], e.b[at+1:at+1+n])
	copy(e.b[at:], tmp[:w])
}

// Encode appends the binary form of r, sealed with its checksum, to dst.
func Encode(dst []byte, r *journal.Record) []byte {
	start := len(dst)
	e := encoder{b: slices.Grow(dst, sizeHint(r))}
	e.b = append(e.b, journal.SchemaVersion, tagChecksum, crcLen, 0, 0, 0, 0)
	e.bytes(tagKey, r.Key[:])
	e.str(tagTenant, r.Intent.Tenant)
	e.str(tagSession, r.Intent.Session)
	e.str(tagTurn, r.Intent.Turn)
	e.str(tagTool, r.Intent.Tool)
	e.str(tagDiscriminator, r.Intent.Discriminator)
	if !r.Fingerprint.IsZero() {
		e.bytes(tagFingerprint, r.Fingerprint[:])
	}
	e.uint(tagEffect, uint64(r.Effect))
	e.bytes(tagInput, r.Input)
	e.uint(tagState, uint64(r.State))
	e.bytes(tagOutput, r.Output)
	e.str(tagErrorClass, r.ErrorClass)
	e.str(tagErrorMessage, r.ErrorMessage)
	for i := range r.Attempts {
		a := &r.Attempts[i]
		at := e.open(tagAttempt)
		e.str(tagAttemptID, a.ID)
		e.time(tagAttemptStart, a.Start)
		e.time(tagAttemptEnd, a.End)
		e.str(tagAttemptClass, a.Class)
		e.str(tagAttemptError, a.Error)
		e.time(tagAttemptQuietAt, a.QuietAt)
		e.end(at)
	}
	e.str(tagLeaseOwner, r.Lease.Owner)
	e.uint(tagLeaseToken, r.Lease.Token)
	e.time(tagLeaseExpires, r.Lease.Expires)
	if r.Resolution != nil {
		e.resolution(tagResolution, r.Resolution)
	}
	e.time(tagCreated, r.Created)
	e.time(tagUpdated, r.Updated)
	e.time(tagExpires, r.Expires)
	if a := r.Approval; a != nil {
		at := e.open(tagApproval)
		e.uint(tagApNeed, uint64(a.Need))
		e.time(tagApDeadline, a.Deadline)
		for i := range a.Given {
			e.resolution(tagApGiven, &a.Given[i])
		}
		e.end(at)
	}
	seal(e.b[start:])
	return e.b
}

func (e *encoder) resolution(tag int, res *journal.Resolution) {
	at := e.open(tag)
	e.uint(tagResState, uint64(res.State))
	e.bytes(tagResOutput, res.Output)
	e.str(tagResReason, res.Reason)
	e.str(tagResBy, res.By)
	e.time(tagResAt, res.At)
	if !res.Fingerprint.IsZero() {
		e.head(tagResFingerprint, len(res.Fingerprint))
		e.b = append(e.b, res.Fingerprint[:]...)
	}
	e.end(at)
}

// sizeHint is about the size of r's encoding, so that it takes one
// allocation.
func sizeHint(r *journal.Record) int {
	n := sealLen + 128 + len(r.Intent.Tenant) + len(r.Intent.Session) + len(r.Intent.Turn) +
		len(r.Intent.Tool) + len(r.Intent.Discriminator) + len(r.Input) + len(r.Output) +
		len(r.ErrorClass) + len(r.ErrorMessage) + len(r.Lease.Owner)
	for i := range r.Attempts {
		a := &r.Attempts[i]
		n += 40 + len(a.ID) + len(a.Class) + len(a.Error)
	}
	if res := r.Resolution; res != nil {
		n += 24 + len(res.Output) + len(res.Reason) + len(res.By)
	}
	if a := r.Approval; a != nil {
		n += 16
		for _, g := range a.Given {
			n += 48 + len(g.Reason) + len(g.By)
		}
	}
	return n
}

// decoder walks the fields of one message. Strings and byte slices alias
// buf, which is never mutated afterwards.
type decoder struct {
	buf []byte
	off int
	err error
}

// next returns the next field, or ok=false at the end or on error. Tags
// and most lengths are one byte, read inline.
func (d *decoder) next() (tag int, payload []byte, ok bool) {
	off, buf := d.off, d.buf
	if d.err != nil || off >= len(buf) {
		return 0, nil, false
	}
	var t, l uint64
	if b := buf[off]; b < 0x80 {
		t = uint64(b)
		off++
	} else {
		var n int
		if t, n = binary.Uvarint(buf[off:]); n <= 0 {
			d.err = fmt.Errorf("bad field tag at byte %d", d.off)
			return 0, nil, false
		}
		off += n
	}
	if off < len(buf) && buf[off] < 0x80 {
		l = uint64(buf[off])
		off++
	} else {
		var n int
		if l, n = binary.Uvarint(buf[off:]); n <= 0 {
			d.err = fmt.Errorf("bad length of field %d at byte %d", t, d.off)
			return 0, nil, false
		}
		off += n
	}
	if l > uint64(len(buf)-off) {
		d.err = fmt.Errorf("bad length of field %d at byte %d", t, d.off)
		return 0, nil, false
	}
	end := off + int(l)
	d.off = end
	return int(t), buf[off:end:end], true
}

func str(p []byte) string {
	if len(p) == 0 {
		return ""
	}
	return unsafe.String(&p[0], len(p))
}

func (d *decoder) uint(p []byte) uint64 {
	v, n := binary.Uvarint(p)
	if n != len(p) && d.err == nil {
		d.err = fmt.Errorf("bad integer before byte %d", d.off)
	}
	return v
}

func (d *decoder) fingerprint(fp *keyderive.Fingerprint, p []byte) {
	if len(p) != len(fp) && d.err == nil {
		d.err = fmt.Errorf("fingerprint of %d bytes", len(p))
		return
	}
	copy(fp[:], p)
}

func (d *decoder) time(p []byte) time.Time {
	v, ok := exactVarint(p)
	if !ok && d.err == nil {
		d.err = fmt.Errorf("bad time before byte %d", d.off)
	}
	return time.Unix(0, v).UTC()
}

// exactVarint is binary.Varint(p) and whether p is exactly that one
// varint (n == len(p)). A time since 1970 in Unix nanoseconds is nine
// bytes of varint: those of nine or ten bytes are read eight at a time.
func exactVarint(p []byte) (int64, bool) {
	if len(p) < 9 || len(p) > binary.MaxVarintLen64 {
		v, n := binary.Varint(p)
		return v, n == len(p)
	}
	// The first eight bytes all carry the continuation bit; the ninth ends
	// the varint, or the tenth does and holds at most the top bit.
	w := binary.LittleEndian.Uint64(p)
	last := p[len(p)-1]
	if w&0x8080808080808080 != 0x8080808080808080 || last >= 0x80 || len(p) == 10 && (p[8] < 0x80 || last > 1) {
		v, n := binary.Varint(p)
		return v, n == len(p)
	}
	// Pack the eight 7-bit groups into 56 bits: pairs, then quads, then all.
	w &= 0x7f7f7f7f7f7f7f7f
	w = w&0x007f007f007f007f | (w&0x7f007f007f007f00)>>1
	w = w&0x00003fff00003fff | (w&0x3fff00003fff0000)>>2
	w = w&0x000000000fffffff | (w&0x0fffffff00000000)>>4
	u := w | uint64(p[8]&0x7f)<<56
	if len(p) == 10 {
		u |= uint64(last) << 63
	}
	v := int64(u >> 1) // zig-zag, as binary.Varint
	if u&1 != 0 {
		v = ^v
	}
	return v, true
}

// Decode decodes a record from val, checking its checksum: an error
// wrapping journal.ErrCorrupt, or journal.ErrNewerVersion, says what is
// wrong (the caller names the key and the file). It copies val once (it
// may be bbolt memory); the result shares that copy.
func Decode(val []byte) (journal.Record, error) {
	var r journal.Record
	if len(val) == 0 {
		return r, fmt.Errorf("%w: empty record", journal.ErrCorrupt)
	}
	sealed := isSealed(val)
	if sealed {
		// Checked before the format byte, which the checksum covers: a
		// damaged format byte is damage, not a newer version.
		if err := checkSeal(val); err != nil {
			return r, err
		}
	}
	if val[0] > journal.SchemaVersion {
		return r, fmt.Errorf("%w: record format %d, this package reads up to %d", journal.ErrNewerVersion, val[0], journal.SchemaVersion)
	}
	if val[0] == 0 {
		return r, fmt.Errorf("%w: record format 0", journal.ErrCorrupt)
	}
	off := sealLen
	if !sealed {
		if !isLegacy(val) {
			return r, fmt.Errorf("%w: record starts with neither a checksum nor a key", journal.ErrCorrupt)
		}
		off = 1
	}
	buf := make([]byte, len(val))
	copy(buf, val)
	r.Version = int(buf[0])
	d := decoder{buf: buf, off: off}
	var attBuf [4][]byte // the attempts' payloads: a record has a few
	atts := attBuf[:0]
	for tag, p, ok := d.next(); ok; tag, p, ok = d.next() {
		switch tag {
		case tagKey:
			if len(p) != 16 {
				d.err = fmt.Errorf("key of %d bytes", len(p))
				break
			}
			r.Key = uuid.UUID(p)
		case tagTenant:
			r.Intent.Tenant = str(p)
		case tagSession:
			r.Intent.Session = str(p)
		case tagTurn:
			r.Intent.Turn = str(p)
		case tagTool:
			r.Intent.Tool = str(p)
		case tagDiscriminator:
			r.Intent.Discriminator = str(p)
		case tagFingerprint:
			d.fingerprint(&r.Fingerprint, p)
		case tagEffect:
			r.Effect = journal.Effect(d.uint(p))
		case tagInput:
			r.Input = p
		case tagState:
			r.State = journal.State(d.uint(p))
		case tagOutput:
			r.Output = p
		case tagErrorClass:
			r.ErrorClass = str(p)
		case tagErrorMessage:
			r.ErrorMessage = str(p)
		case tagAttempt:
			atts = append(atts, p) // decoded below, into a slice of their number
		case tagLeaseOwner:
			r.Lease.Owner = str(p)
		case tagLeaseToken:
			r.Lease.Token = d.uint(p)
		case tagLeaseExpires:
			r.Lease.Expires = d.time(p)
		case tagResolution:
			r.Resolution = decodeResolution(&d, p)
		case tagCreated:
			r.Created = d.time(p)
		case tagUpdated:
			r.Updated = d.time(p)
		case tagExpires:
			r.Expires = d.time(p)
		case tagApproval:
			r.Approval = decodeApproval(&d, p)
		}
	}
	if len(atts) > 0 && d.err == nil {
		r.Attempts = make([]journal.Attempt, len(atts))
		for i, p := range atts {
			r.Attempts[i] = decodeAttempt(&d, p)
		}
	}
	if d.err != nil {
		return journal.Record{}, fmt.Errorf("%w: %v", journal.ErrCorrupt, d.err)
	}
	if r.Key == uuid.Nil || r.State == 0 || r.State == journal.StateAwaiting && r.Approval == nil {
		return journal.Record{}, fmt.Errorf("%w: record without key, state, or the approval it awaits", journal.ErrCorrupt)
	}
	return r, nil
}

func decodeAttempt(parent *decoder, p []byte) journal.Attempt {
	var a journal.Attempt
	d := decoder{buf: p}
	for tag, q, ok := d.next(); ok; tag, q, ok = d.next() {
		switch tag {
		case tagAttemptID:
			a.ID = str(q)
		case tagAttemptStart:
			a.Start = d.time(q)
		case tagAttemptEnd:
			a.End = d.time(q)
		case tagAttemptClass:
			a.Class = str(q)
		case tagAttemptError:
			a.Error = str(q)
		case tagAttemptQuietAt:
			a.QuietAt = d.time(q)
		}
	}
	if d.err != nil && parent.err == nil {
		parent.err = fmt.Errorf("attempt: %v", d.err)
	}
	return a
}

func decodeResolution(parent *decoder, p []byte) *journal.Resolution {
	res := new(journal.Resolution)
	d := decoder{buf: p}
	for tag, q, ok := d.next(); ok; tag, q, ok = d.next() {
		switch tag {
		case tagResState:
			res.State = journal.State(d.uint(q))
		case tagResOutput:
			res.Output = q
		case tagResReason:
			res.Reason = str(q)
		case tagResBy:
			res.By = str(q)
		case tagResAt:
			res.At = d.time(q)
		case tagResFingerprint:
			d.fingerprint(&res.Fingerprint, q)
		}
	}
	if d.err != nil && parent.err == nil {
		parent.err = fmt.Errorf("resolution: %v", d.err)
	}
	return res
}

func decodeApproval(parent *decoder, p []byte) *journal.Approval {
	a := new(journal.Approval)
	d := decoder{buf: p}
	for tag, q, ok := d.next(); ok; tag, q, ok = d.next() {
		switch tag {
		case tagApNeed:
			a.Need = int(d.uint(q))
		case tagApDeadline:
			a.Deadline = d.time(q)
		case tagApGiven:
			a.Given = append(a.Given, *decodeResolution(&d, q))
		}
	}
	if d.err != nil && parent.err == nil {
		parent.err = fmt.Errorf("approval: %v", d.err)
	}
	return a
}

// Integrity. A sealed record is the format byte, a checksum field
// (tagChecksum, length 4) holding the CRC-32C of every other byte, then the
// fields; an earlier reader skips the checksum as an unknown tag. A record
// written before checksums (legacy) starts with the format byte and the
// key field (tagKey, length 16): it is decoded unchecked and sealed when
// next written. Both bytes of the two prefixes differ, so no single damaged
// byte makes a sealed record pass as a legacy one.
const (
	tagChecksum = 127 // the largest one-byte tag, far from the fields
	crcLen      = 4
	sealLen     = 3 + crcLen // format byte, tag, length, CRC
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crcOf is the checksum of a sealed value: all of it but the CRC itself.
func crcOf(val []byte) uint32 {
	return crc32.Update(crc32.Update(0, castagnoli, val[:1]), castagnoli, val[sealLen:])
}

// seal writes the checksum of val, an encoding that reserved its place.
func seal(val []byte) {
	binary.LittleEndian.PutUint32(val[3:sealLen], crcOf(val))
}

func isSealed(val []byte) bool {
	return len(val) >= sealLen && val[1] == tagChecksum && val[2] == crcLen
}

func isLegacy(val []byte) bool {
	return len(val) >= 3 && val[1] == tagKey && val[2] == 16
}

// checkSeal verifies a sealed value's checksum.
func checkSeal(val []byte) error {
	stored, computed := binary.LittleEndian.Uint32(val[3:sealLen]), crcOf(val)
	if stored != computed {
		return fmt.Errorf("%w: checksum mismatch: record stores %08x, its bytes sum to %08x", journal.ErrCorrupt, stored, computed)
	}
	return nil
}
