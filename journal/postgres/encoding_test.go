package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

func TestUncertain(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"server ERROR", &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "23505"}, false},
		{"serialization failure", fmt.Errorf("wrapped: %w", &pgconn.PgError{SeverityUnlocalized: "ERROR", Code: "40001"}), false},
		{"terminated backend", &pgconn.PgError{SeverityUnlocalized: "FATAL", Code: "57P01"}, true},
		{"localized FATAL", &pgconn.PgError{Severity: "FATAL", Code: "57P01"}, true},
		{"connection failure", &pgconn.PgError{SeverityUnlocalized: "ERROR", Code: "08006"}, true},
		{"EOF", fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), true},
		{"net error", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, true},
		{"closed conn", net.ErrClosed, true},
		{"cancelled", context.Canceled, true},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), true},
		{"client-side argument error", errors.New("expected 26 arguments, got 27"), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		if got := uncertain(tt.err); got != tt.want {
			t.Errorf("uncertain(%s: %v) = %v; want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

func sampleRecord() journal.Record {
	at := time.Date(2026, 5, 6, 7, 8, 9, 987654321, time.UTC)
	return journal.Record{
		Version:      journal.SchemaVersion,
		Key:          uuid.MustParse("6ba7b810-9dad-11d1-80b4-00c04fd430c8"),
		Intent:       keyderive.Intent{Tenant: "t", Session: "s", Turn: "7", Tool: "charge", Discriminator: "d"},
		Fingerprint:  keyderive.FingerprintOf([]byte(`{"a":1}`)),
		Effect:       journal.Idempotent,
		Input:        []byte(`{"a":1}`),
		State:        journal.StateSucceeded,
		Output:       []byte(`"ok"`),
		ErrorClass:   "",
		ErrorMessage: "",
		Attempts: []journal.Attempt{
			{ID: "a1", Start: at, End: at.Add(time.Second), Class: "retryable", Error: "503"},
			{ID: "a2", Start: at.Add(2 * time.Second), End: at.Add(3 * time.Second), QuietAt: at.Add(time.Minute)},
		},
		Lease:      journal.Lease{Owner: "w", Token: 3, Expires: at.Add(time.Minute)},
		Resolution: &journal.Resolution{State: journal.StateSucceeded, Output: []byte("x"), Reason: "r", By: "b", At: at},
		Created:    at,
		Updated:    at.Add(3 * time.Second),
		Expires:    at.Add(journal.DefaultTTL),
	}
}

func TestRowRoundTrip(t *testing.T) {
	for _, mod := range []struct {
		name string
		fn   func(*journal.Record)
	}{
		{"full", func(*journal.Record) {}},
		{"no input, no output, no resolution", func(r *journal.Record) { r.Input, r.Output, r.Resolution = nil, nil, nil }},
		{"empty input", func(r *journal.Record) { r.Input = []byte{} }},
		{"open attempt, no lease expiry", func(r *journal.Record) {
			r.State = journal.StatePending
			r.Attempts = r.Attempts[:1]
			r.Attempts[0].End, r.Attempts[0].Class, r.Attempts[0].Error = time.Time{}, "", ""
			r.Lease.Expires = time.Time{}
		}},
		{"no attempts", func(r *journal.Record) { r.Attempts = nil }},
		{"approved, with a resolution's fingerprint", func(r *journal.Record) {
			r.Resolution.Fingerprint = r.Fingerprint
			r.Approval = &journal.Approval{Need: 2, Deadline: r.Created.Add(time.Hour), Given: []journal.Resolution{
				{State: journal.StatePending, By: "alice", Reason: "ok", At: r.Created, Fingerprint: r.Fingerprint},
				{State: journal.StatePending, By: "bob", Output: []byte("x"), At: r.Updated, Fingerprint: r.Fingerprint}}}
		}},
		{"awaiting, none given", func(r *journal.Record) {
			r.State, r.Attempts, r.Output, r.Resolution = journal.StateAwaiting, nil, nil, nil
			r.Approval = &journal.Approval{Need: 1}
		}},
	} {
		rec := sampleRecord()
		mod.fn(&rec)
		r, err := rowOf(rec)
		if err != nil {
			t.Fatalf("%s: rowOf = %v", mod.name, err)
		}
		got, err := r.record()
		if err != nil {
			t.Fatalf("%s: record() = %v", mod.name, err)
		}
		if !reflect.DeepEqual(got, rec) {
			t.Errorf("%s: round trip = %+v; want %+v", mod.name, got, rec)
		}
	}
}

func TestRowRefusesWhatTextCannotHold(t *testing.T) {
	tests := []struct {
		name string
		fn   func(*journal.Record)
	}{
		{"tenant", func(r *journal.Record) { r.Intent.Tenant = "a\x00" }},
		{"session", func(r *journal.Record) { r.Intent.Session = "\xff" }},
		{"lease owner", func(r *journal.Record) { r.Lease.Owner = "\x00" }},
		{"created", func(r *journal.Record) { r.Created = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"attempt 2 start", func(r *journal.Record) { r.Attempts[1].Start = time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC) }},
	}
	for _, tt := range tests {
		rec := sampleRecord()
		tt.fn(&rec)
		_, err := rowOf(rec)
		if err == nil || !strings.Contains(err.Error(), tt.name) {
			t.Errorf("rowOf(bad %s) = %v; want an error naming %s", tt.name, err, tt.name)
		}
	}
}

// FuzzRowRoundTrip: any record either is refused with an error or comes
// back from its stored form unchanged, free text made valid.
func FuzzRowRoundTrip(f *testing.F) {
	f.Add("t", "s", "1", "tool", "", "owner", "msg", "a1", int64(0), uint64(1))
	f.Add("\x00", "\xff", "", "", "d", "", "\x00\xff", "", int64(-1), uint64(1<<62))
	f.Fuzz(func(t *testing.T, tenant, session, turn, tool, disc, owner, msg, attemptID string, ns int64, token uint64) {
		rec := sampleRecord()
		rec.Intent = keyderive.Intent{Tenant: tenant, Session: session, Turn: turn, Tool: tool, Discriminator: disc}
		rec.Lease.Owner, rec.Lease.Token = owner, token
		rec.ErrorMessage = msg
		rec.Attempts[0].ID, rec.Attempts[0].Error = attemptID, msg
		rec.Created = time.Unix(0, ns).UTC()
		r, err := rowOf(rec)
		if err != nil {
			return
		}
		got, err := r.record()
		if err != nil {
			t.Fatalf("record() of an accepted row = %v", err)
		}
		for _, s := range []string{got.ErrorMessage, got.Attempts[0].ID, got.Attempts[0].Error} {
			if !utf8.ValidString(s) || strings.Contains(s, "\x00") {
				t.Fatalf("stored free text %q is not valid UTF-8 without NUL", s)
			}
		}
		want := rec
		want.ErrorMessage = cleanText(msg)
		want.Attempts = append([]journal.Attempt(nil), rec.Attempts...)
		want.Attempts[0].ID, want.Attempts[0].Error = cleanText(attemptID), cleanText(msg)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip = %+v; want %+v", got, want)
		}
		if !sameRow(r, mustRow(t, got)) {
			t.Fatalf("sameRow(row, row of its record) = false; want true")
		}
	})
}

func mustRow(t *testing.T, rec journal.Record) row {
	t.Helper()
	r, err := rowOf(rec)
	if err != nil {
		t.Fatalf("rowOf(decoded record) = %v", err)
	}
	return r
}
