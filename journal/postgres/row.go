package postgres

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

// columns is the records table's column list, in the order of row's fields
// and then the checksum; every query that reads a record selects exactly
// these. The checksum covers all the others (row.digest, digestSQL).
const columns = `key, version, tenant, session, turn, tool, discriminator,
	fingerprint, effect, input, state, output, error_class, error_message,
	attempts, lease_owner, lease_token, lease_expires_ns,
	res_state, res_output, res_reason, res_by, res_at_ns,
	created_ns, updated_ns, expires_ns, res_fingerprint, approval, checksum`

// columnTypes casts the parameters of an INSERT … SELECT, whose types
// PostgreSQL cannot infer from the target columns.
var columnTypes = []string{"uuid", "integer", "text", "text", "text", "text", "text",
	"bytea", "smallint", "bytea", "smallint", "bytea", "text", "text",
	"jsonb", "text", "bigint", "bigint",
	"smallint", "bytea", "text", "text", "bigint",
	"bigint", "bigint", "bigint", "bytea", "jsonb", "bytea"}

// row is a record as stored: one field per column, times in nanoseconds
// since the Unix epoch (nil for the zero time). It is also the canonical
// form Import compares records in. The checksum column is not a field: the
// writing statement computes it, and scanning checks it.
type row struct {
	Key           uuid.UUID
	Version       int32
	Tenant        string
	Session       string
	Turn          string
	Tool          string
	Discriminator string
	Fingerprint   []byte
	Effect        int16
	Input         []byte
	State         int16
	Output        []byte
	ErrorClass    string
	ErrorMessage  string
	Attempts      []byte // jsonb array of storedAttempt
	LeaseOwner    string
	LeaseToken    int64
	LeaseExpires  *int64
	ResState      *int16
	ResOutput     []byte
	ResReason     *string
	ResBy         *string
	ResAt         *int64
	Created       int64
	Updated       int64
	Expires       int64
	// Schema 6 on (tailColumns): NULL for none.
	ResFingerprint []byte
	Approval       []byte // jsonb storedApproval
}

// storedAttempt is an Attempt inside the attempts jsonb array.
type storedAttempt struct {
	ID    string `json:"id"`
	Start *int64 `json:"start,omitempty"`
	End   *int64 `json:"end,omitempty"`
	Class string `json:"class,omitempty"`
	Error string `json:"error,omitempty"`
	Quiet *int64 `json:"quiet,omitempty"` // Attempt.QuietAt
}

// storedApproval is a Record.Approval in the approval jsonb column.
type storedApproval struct {
	Need     int           `json:"need"`
	Deadline *int64        `json:"deadline,omitempty"`
	Given    []storedGiven `json:"given"`
}

// storedGiven is an approval given: a Resolution whose State is pending.
type storedGiven struct {
	By          string `json:"by"`
	Reason      string `json:"reason,omitempty"`
	At          *int64 `json:"at,omitempty"`
	Output      []byte `json:"output,omitempty"`
	Fingerprint []byte `json:"fingerprint"`
}

func (r *row) args() []any {
	return []any{keyArg(r.Key), r.Version, r.Tenant, r.Session, r.Turn, r.Tool, r.Discriminator,
		r.Fingerprint, r.Effect, r.Input, r.State, r.Output, r.ErrorClass, r.ErrorMessage,
		string(r.Attempts), r.LeaseOwner, r.LeaseToken, r.LeaseExpires,
		r.ResState, r.ResOutput, r.ResReason, r.ResBy, r.ResAt,
		r.Created, r.Updated, r.Expires, r.ResFingerprint, r.Approval} // the checksum: sealed by the statement (sealExpr)
}

// keyArg is a record key as a statement's parameter: pgtype.UUID, which
// pgx encodes in binary directly, where a uuid.UUID goes through its
// driver.Valuer (a string), whose encoding as a uuid fails and is retried by
// parsing the string: an error built and a parse on every call.
func keyArg(k uuid.UUID) pgtype.UUID { return pgtype.UUID{Bytes: k, Valid: true} }

// scanRow scans a row whose record columns follow the leading columns
// scanned into lead, and checks its checksum: a damaged row is an error
// wrapping journal.ErrCorrupt, whatever the caller wanted it for.
func scanRow(s pgx.Row, lead ...any) (row, error) {
	var r row
	var key pgtype.UUID
	var attempts, checksum []byte
	err := s.Scan(append(lead, &key, &r.Version, &r.Tenant, &r.Session, &r.Turn, &r.Tool, &r.Discriminator,
		&r.Fingerprint, &r.Effect, &r.Input, &r.State, &r.Output, &r.ErrorClass, &r.ErrorMessage,
		&attempts, &r.LeaseOwner, &r.LeaseToken, &r.LeaseExpires,
		&r.ResState, &r.ResOutput, &r.ResReason, &r.ResBy, &r.ResAt,
		&r.Created, &r.Updated, &r.Expires, &r.ResFingerprint, &r.Approval, &checksum)...)
	r.Key, r.Attempts = key.Bytes, attempts
	if err != nil {
		return r, err
	}
	return r, r.checkSum(checksum)
}

// checkSum compares the stored checksum with the row's digest.
func (r *row) checkSum(stored []byte) error {
	if stored == nil {
		return fmt.Errorf("record %s: no checksum (written by a session without %s on): %w",
			r.Key, sealSetting, journal.ErrCorrupt)
	}
	if d := r.digest(); !bytes.Equal(stored, d[:]) {
		return fmt.Errorf("record %s: checksum mismatch: the row stores %x, its columns sum to %x: %w",
			r.Key, stored, d, journal.ErrCorrupt)
	}
	return nil
}

// digestCount is how many columns the checksum's first row covers.
var digestCount = uint32(len(digestColumns()) - len(tailColumns))

// digest is the checksum the records table's trigger stores (digestSQL):
// the SHA-256 of record_send of a row of every column but the checksum, in
// table order, which is the order of row's fields. record_send writes the
// column count, then for each column its type OID, its length (-1 for
// NULL) and its binary send form: integers big-endian, text in the
// session's encoding (UTF-8, which pgx sets), jsonb as a version byte and
// its text. The tail columns follow as a row of their own when one is
// not NULL.
func (r *row) digest() [sha256.Size]byte {
	b := make([]byte, 0, 512+len(r.Input)+len(r.Output)+len(r.ResOutput)+len(r.Attempts)+len(r.ErrorMessage)+len(r.Approval))
	b = binary.BigEndian.AppendUint32(b, digestCount)
	// Each column is appended in place: its type, its length (-1 for
	// NULL), its bytes.
	head := func(oid uint32, n int) {
		b = binary.BigEndian.AppendUint32(b, oid)
		b = binary.BigEndian.AppendUint32(b, uint32(n))
	}
	null := func(oid uint32, isNull bool) bool {
		if isNull {
			head(oid, -1)
		}
		return isNull
	}
	col := func(oid uint32, p []byte) {
		if !null(oid, p == nil) {
			head(oid, len(p))
			b = append(b, p...)
		}
	}
	jsonb := func(p []byte) {
		if !null(pgtype.JSONBOID, p == nil) {
			head(pgtype.JSONBOID, 1+len(p)) // jsonb's version byte, then its text
			b = append(append(b, 1), p...)
		}
	}
	text := func(s string) {
		head(pgtype.TextOID, len(s))
		b = append(b, s...)
	}
	i16 := func(v int16) {
		head(pgtype.Int2OID, 2)
		b = binary.BigEndian.AppendUint16(b, uint16(v))
	}
	i64 := func(v int64) {
		head(pgtype.Int8OID, 8)
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	col(pgtype.UUIDOID, r.Key[:])
	head(pgtype.Int4OID, 4)
	b = binary.BigEndian.AppendUint32(b, uint32(r.Version))
	text(r.Tenant)
	text(r.Session)
	text(r.Turn)
	text(r.Tool)
	text(r.Discriminator)
	col(pgtype.ByteaOID, r.Fingerprint)
	i16(r.Effect)
	col(pgtype.ByteaOID, r.Input)
	i16(r.State)
	col(pgtype.ByteaOID, r.Output)
	text(r.ErrorClass)
	text(r.ErrorMessage)
	jsonb(r.Attempts)
	text(r.LeaseOwner)
	i64(r.LeaseToken)
	if !null(pgtype.Int8OID, r.LeaseExpires == nil) {
		i64(*r.LeaseExpires)
	}
	if !null(pgtype.Int2OID, r.ResState == nil) {
		i16(*r.ResState)
	}
	col(pgtype.ByteaOID, r.ResOutput)
	for _, t := range []*string{r.ResReason, r.ResBy} {
		if !null(pgtype.TextOID, t == nil) {
			text(*t)
		}
	}
	if !null(pgtype.Int8OID, r.ResAt == nil) {
		i64(*r.ResAt)
	}
	i64(r.Created)
	i64(r.Updated)
	i64(r.Expires)
	if r.ResFingerprint != nil || r.Approval != nil {
		b = binary.BigEndian.AppendUint32(b, uint32(len(tailColumns)))
		col(pgtype.ByteaOID, r.ResFingerprint)
		jsonb(r.Approval)
	}
	return sha256.Sum256(b)
}

// record decodes a stored row.
func (r *row) record() (journal.Record, error) {
	if r.Version > journal.SchemaVersion {
		return journal.Record{}, fmt.Errorf("record %s has schema version %d, this package reads up to %d: %w",
			r.Key, r.Version, journal.SchemaVersion, journal.ErrNewerVersion)
	}
	rec := journal.Record{
		Version: int(r.Version),
		Key:     r.Key,
		Intent: keyderive.Intent{Tenant: r.Tenant, Session: r.Session, Turn: r.Turn,
			Tool: r.Tool, Discriminator: r.Discriminator},
		Effect:       journal.Effect(r.Effect),
		Input:        r.Input,
		State:        journal.State(r.State),
		Output:       r.Output,
		ErrorClass:   r.ErrorClass,
		ErrorMessage: r.ErrorMessage,
		Lease:        journal.Lease{Owner: r.LeaseOwner, Token: uint64(r.LeaseToken), Expires: fromNanosPtr(r.LeaseExpires)},
		Created:      fromNanos(r.Created),
		Updated:      fromNanos(r.Updated),
		Expires:      fromNanos(r.Expires),
	}
	var err error
	if rec.Fingerprint, err = fingerprint("fingerprint", r.Fingerprint); err != nil {
		return journal.Record{}, fmt.Errorf("record %s: %w", r.Key, err)
	}
	var atts []storedAttempt
	if err := json.Unmarshal(r.Attempts, &atts); err != nil {
		return journal.Record{}, fmt.Errorf("record %s: attempts: %v: %w", r.Key, err, journal.ErrCorrupt)
	}
	for _, a := range atts {
		rec.Attempts = append(rec.Attempts, journal.Attempt{ID: a.ID, Start: fromNanosPtr(a.Start),
			End: fromNanosPtr(a.End), Class: a.Class, Error: a.Error, QuietAt: fromNanosPtr(a.Quiet)})
	}
	if r.ResState != nil {
		res := &journal.Resolution{State: journal.State(*r.ResState), Output: r.ResOutput, At: fromNanosPtr(r.ResAt)}
		if r.ResReason != nil {
			res.Reason = *r.ResReason
		}
		if r.ResBy != nil {
			res.By = *r.ResBy
		}
		if r.ResFingerprint != nil {
			if res.Fingerprint, err = fingerprint("resolution fingerprint", r.ResFingerprint); err != nil {
				return journal.Record{}, fmt.Errorf("record %s: %w", r.Key, err)
			}
		}
		rec.Resolution = res
	}
	if rec.Approval, err = r.approval(); err == nil && rec.State == journal.StateAwaiting && rec.Approval == nil {
		err = fmt.Errorf("none on a record awaiting one: %w", journal.ErrCorrupt)
	}
	if err != nil {
		return journal.Record{}, fmt.Errorf("record %s: approval: %w", r.Key, err)
	}
	return rec, nil
}

// approval decodes the approval column, nil when NULL.
func (r *row) approval() (*journal.Approval, error) {
	if r.Approval == nil {
		return nil, nil
	}
	var sa storedApproval
	if err := json.Unmarshal(r.Approval, &sa); err != nil {
		return nil, fmt.Errorf("%v: %w", err, journal.ErrCorrupt)
	}
	a := &journal.Approval{Need: sa.Need, Deadline: fromNanosPtr(sa.Deadline)}
	for i, g := range sa.Given {
		fp, err := fingerprint(fmt.Sprintf("approval %d fingerprint", i+1), g.Fingerprint)
		if err != nil {
			return nil, err
		}
		a.Given = append(a.Given, journal.Resolution{State: journal.StatePending, Output: g.Output,
			Reason: g.Reason, By: g.By, At: fromNanosPtr(g.At), Fingerprint: fp})
	}
	return a, nil
}

// fingerprint decodes a stored fingerprint, naming it when damaged.
func fingerprint(name string, b []byte) (keyderive.Fingerprint, error) {
	var fp keyderive.Fingerprint
	if len(b) != len(fp) {
		return fp, fmt.Errorf("%s is %d bytes, want %d: %w", name, len(b), len(fp), journal.ErrCorrupt)
	}
	copy(fp[:], b)
	return fp, nil
}

// rowOf encodes a record for storage. It refuses identity fields PostgreSQL
// text cannot hold (NUL bytes, invalid UTF-8) and times outside the range of
// int64 nanoseconds, naming the field; free text (error messages) is made
// valid instead, since refusing it would lose an outcome.
func rowOf(rec journal.Record) (row, error) {
	var t nanos
	r := row{
		Key:          rec.Key,
		Version:      int32(rec.Version),
		Fingerprint:  append([]byte(nil), rec.Fingerprint[:]...),
		Effect:       int16(rec.Effect),
		Input:        rec.Input,
		State:        int16(rec.State),
		Output:       rec.Output,
		ErrorClass:   cleanText(rec.ErrorClass),
		ErrorMessage: cleanText(rec.ErrorMessage),
		LeaseToken:   int64(rec.Lease.Token),
		LeaseExpires: t.ptr("lease expiry", rec.Lease.Expires),
		Created:      t.of("created", rec.Created),
		Updated:      t.of("updated", rec.Updated),
		Expires:      t.of("expires", rec.Expires),
	}
	if rec.Lease.Token > math.MaxInt64 {
		return row{}, fmt.Errorf("record %s: fencing token %d does not fit a bigint", rec.Key, rec.Lease.Token)
	}
	texts := []struct {
		name string
		dst  *string
		val  string
	}{
		{"tenant", &r.Tenant, rec.Intent.Tenant},
		{"session", &r.Session, rec.Intent.Session},
		{"turn", &r.Turn, rec.Intent.Turn},
		{"tool", &r.Tool, rec.Intent.Tool},
		{"discriminator", &r.Discriminator, rec.Intent.Discriminator},
		{"lease owner", &r.LeaseOwner, rec.Lease.Owner},
	}
	for _, x := range texts {
		if err := checkText(x.name, x.val); err != nil {
			return row{}, fmt.Errorf("record %s: %w", rec.Key, err)
		}
		*x.dst = x.val
	}
	atts := make([]storedAttempt, 0, len(rec.Attempts))
	for i, a := range rec.Attempts {
		atts = append(atts, storedAttempt{ID: cleanText(a.ID), Class: cleanText(a.Class), Error: cleanText(a.Error),
			Start: t.ptr(fmt.Sprintf("attempt %d start", i+1), a.Start), End: t.ptr(fmt.Sprintf("attempt %d end", i+1), a.End),
			Quiet: t.ptr(fmt.Sprintf("attempt %d quiet time", i+1), a.QuietAt)})
	}
	var err error
	if r.Attempts, err = json.Marshal(atts); err != nil {
		return row{}, err
	}
	if res := rec.Resolution; res != nil {
		st := int16(res.State)
		reason, by := cleanText(res.Reason), cleanText(res.By)
		r.ResState, r.ResOutput, r.ResReason, r.ResBy = &st, res.Output, &reason, &by
		r.ResAt = t.ptr("resolution time", res.At)
		if !res.Fingerprint.IsZero() {
			r.ResFingerprint = res.Fingerprint[:]
		}
	}
	if a := rec.Approval; a != nil {
		sa := storedApproval{Need: a.Need, Deadline: t.ptr("approval deadline", a.Deadline), Given: make([]storedGiven, len(a.Given))}
		for i, g := range a.Given {
			sa.Given[i] = storedGiven{By: cleanText(g.By), Reason: cleanText(g.Reason), Output: g.Output,
				Fingerprint: g.Fingerprint[:], At: t.ptr(fmt.Sprintf("approval %d time", i+1), g.At)}
		}
		if r.Approval, err = json.Marshal(sa); err != nil {
			return row{}, err
		}
	}
	if t.err != nil {
		return row{}, fmt.Errorf("record %s: %w", rec.Key, t.err)
	}
	return r, nil
}

// checkText refuses a string PostgreSQL text cannot hold.
func checkText(field, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s %q is not valid UTF-8", field, s)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%s %q contains a NUL byte, which PostgreSQL text cannot hold", field, s)
	}
	return nil
}

// cleanText makes free text storable: invalid UTF-8 and NUL bytes become
// U+FFFD. See the package's Caveats.
func cleanText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// minNanos and maxNanos bound the times an int64 of nanoseconds holds
// (years 1678 to 2262).
var (
	minNanos = time.Unix(0, math.MinInt64)
	maxNanos = time.Unix(0, math.MaxInt64)
)

// nanos converts times to nanoseconds, keeping the first error: a time
// outside the years int64 nanoseconds hold.
type nanos struct{ err error }

func (n *nanos) of(field string, t time.Time) int64 {
	if n.err == nil && (t.Before(minNanos) || t.After(maxNanos)) {
		n.err = fmt.Errorf("%s %s is outside the years 1678 to 2262 the journal stores", field, t.Format(time.RFC3339))
	}
	return t.UnixNano()
}

// ptr is of, nil for the zero time.
func (n *nanos) ptr(field string, t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	v := n.of(field, t)
	return &v
}

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

func fromNanosPtr(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return fromNanos(*n)
}
