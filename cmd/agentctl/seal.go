package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentonce/agentonce/journal"
)

// sealName is the header's name for how each record line is sealed: the
// line ends with a checksum member, the SHA-256 of the line's bytes before
// it (the record's JSON object without that member). Any change to the
// record's bytes, whitespace included, breaks the seal: export writes the
// lines, and nothing needs to rewrite them.
const sealName = "sha256"

// checksumMember is how the seal starts at the end of a line.
const checksumMember = `,"checksum":"`

// errUnsealed is returned for a record line without a checksum.
var errUnsealed = errors.New("no checksum")

// sealOf is the checksum of a record's JSON object.
func sealOf(obj []byte) string {
	sum := sha256.Sum256(obj)
	return hex.EncodeToString(sum[:])
}

// sealedLine is r's export line: its JSON form with a checksum member.
func sealedLine(r *journal.Record) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	obj := bytes.TrimRight(buf.Bytes(), "\n")
	out := append(obj[:len(obj)-1:len(obj)-1], checksumMember...)
	out = append(out, sealOf(obj)...)
	return append(out, "\"}\n"...), nil
}

// unsealLine checks a record line's checksum and decodes its record. A
// missing checksum is errUnsealed; a wrong one names both sums.
func unsealLine(line []byte) (journal.Record, error) {
	i := bytes.LastIndex(line, []byte(checksumMember))
	const hexLen = 2 * sha256.Size
	if i < 0 || len(line) != i+len(checksumMember)+hexLen+2 || !bytes.HasSuffix(line, []byte("\"}")) {
		return journal.Record{}, errUnsealed
	}
	want := string(line[i+len(checksumMember) : i+len(checksumMember)+hexLen])
	obj := append(line[:i:i], '}')
	if got := sealOf(obj); got != want {
		return journal.Record{}, fmt.Errorf("%w: the record does not match its checksum (%s, recorded %s): the line was changed or damaged",
			journal.ErrCorrupt, got, want)
	}
	var rec journal.Record
	if err := json.Unmarshal(obj, &rec); err != nil {
		return journal.Record{}, err
	}
	return rec, nil
}
