package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
)

// sealName is the header's name for how each record line is sealed: the
// line ends with a "seal" member, the HMAC-SHA-256 of the record's
// canonical JSON (its export form without the seal) under a key derived
// from the journal's namespace. A plain hash would only detect damage:
// whoever edits a line recomputes it. The HMAC can be made only by a
// holder of the namespace, which is why the export no longer carries it.
// Sealing the canonical form rather than the line's bytes lets a line that
// a tool reformatted (whitespace, member order, escapes) still import: the
// seal covers exactly the record that is imported.
const sealName = "hmac-sha256"

// sealMember is the name of a record line's seal.
const sealMember = "seal"

// errUnsealed is returned for a record line without a seal.
var errUnsealed = errors.New("no seal")

// sealKey is the key that seals an export's lines, derived from the
// journal's namespace.
type sealKey []byte

// exportSealKey derives the seal key from ns. The namespace is never the
// MAC key itself: it is also the key of every intent's derivation, and a
// dedicated key (HMAC(namespace, a label naming this use and its version))
// keeps the two uses apart, so that no value computed for one can stand in
// for the other, and a later seal version gets a key of its own.
func exportSealKey(ns uuid.UUID) sealKey {
	m := hmac.New(sha256.New, ns[:])
	m.Write([]byte("agentonce export seal v1"))
	return m.Sum(nil)
}

// mac is the HMAC-SHA-256 of b under k, in hex.
func (k sealKey) mac(b []byte) string {
	m := hmac.New(sha256.New, k)
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil))
}

// id names the key in the export's header, so that an import under
// another namespace is told so, not that every line is forged. It is a MAC
// of a fixed label: it says nothing about the namespace to whoever lacks
// it.
func (k sealKey) id() string { return k.mac([]byte("key id"))[:32] }

// canonicalRecord is r's JSON object as export writes it.
func canonicalRecord(r *journal.Record) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// sealedLine is r's export line: its canonical JSON with a seal member.
func sealedLine(k sealKey, r *journal.Record) ([]byte, error) {
	obj, err := canonicalRecord(r)
	if err != nil {
		return nil, err
	}
	out := append(obj[:len(obj)-1:len(obj)-1], `,"`+sealMember+`":"`...)
	out = append(out, k.mac(obj)...)
	return append(out, "\"}\n"...), nil
}

// unsealLine decodes a record line and checks its seal against the
// record's canonical form. A line without a seal is errUnsealed; a seal
// that does not match says the record was changed by someone without the
// namespace, or sealed under another.
func unsealLine(k sealKey, line []byte) (journal.Record, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(line, &members); err != nil {
		return journal.Record{}, fmt.Errorf("not a record on one line (%v): an export is JSON Lines, one record a line, "+
			"and a tool that spread records over several lines or cut one broke it; export again", err)
	}
	var seal string
	raw, ok := members[sealMember]
	if !ok {
		return journal.Record{}, errUnsealed
	}
	if err := json.Unmarshal(raw, &seal); err != nil {
		return journal.Record{}, fmt.Errorf("the seal is not a string: %s", raw)
	}
	delete(members, sealMember)
	// Without HTML escaping, which would change the bytes of an embedded
	// input or output (<, > and &); the members are compacted, which
	// undoes whitespace a tool added inside them.
	var obj bytes.Buffer
	enc := json.NewEncoder(&obj)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(members); err != nil {
		return journal.Record{}, err
	}
	var rec journal.Record
	if err := json.Unmarshal(obj.Bytes(), &rec); err != nil {
		return journal.Record{}, err
	}
	canon, err := canonicalRecord(&rec)
	if err != nil {
		return journal.Record{}, err
	}
	if !hmac.Equal([]byte(k.mac(canon)), []byte(seal)) {
		return journal.Record{}, errors.New("the record does not match its seal: it was changed by someone " +
			"who does not hold the journal's namespace, or damaged")
	}
	return rec, nil
}
