package main

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

// recordJSON is the one JSON schema of a journal record, used by ls --json,
// show --json, export and import. jsonSchemaHelp documents it; change both
// together and only by adding fields.
type recordJSON struct {
	Version       int    `json:"version"`
	Key           string `json:"key"`
	Tenant        string `json:"tenant"`
	Session       string `json:"session"`
	Turn          string `json:"turn"`
	Tool          string `json:"tool"`
	Discriminator string `json:"discriminator"`
	Fingerprint   string `json:"fingerprint"`
	Effect        string `json:"effect"`
	State         string `json:"state"`
	// Input and Output are embedded JSON, or null. Bytes that are not
	// compact JSON go base64-encoded in the *_base64 field instead, so
	// every record round-trips byte for byte.
	Input        json.RawMessage `json:"input"`
	InputBase64  *string         `json:"input_base64,omitempty"`
	Output       json.RawMessage `json:"output"`
	OutputBase64 *string         `json:"output_base64,omitempty"`
	ErrorClass   string          `json:"error_class"`
	ErrorMessage string          `json:"error_message"`
	Attempts     []attemptJSON   `json:"attempts"`
	Lease        leaseJSON       `json:"lease"`
	Resolution   *resolutionJSON `json:"resolution"`
	Created      time.Time       `json:"created"`
	Updated      time.Time       `json:"updated"`
	Expires      time.Time       `json:"expires"`
}

type attemptJSON struct {
	ID    string     `json:"id"`
	Start time.Time  `json:"start"`
	End   *time.Time `json:"end"`
	Class string     `json:"class"`
	Error string     `json:"error"`
}

type leaseJSON struct {
	Owner   string     `json:"owner"`
	Token   uint64     `json:"token"`
	Expires *time.Time `json:"expires"`
}

type resolutionJSON struct {
	State        string          `json:"state"`
	Output       json.RawMessage `json:"output"`
	OutputBase64 *string         `json:"output_base64,omitempty"`
	Reason       string          `json:"reason"`
	By           string          `json:"by"`
	At           time.Time       `json:"at"`
}

// exportHeader is the first line of an export: it carries the journal's
// namespace so that import can create a journal whose keys still match.
type exportHeader struct {
	Export    int    `json:"agentonce_export"`
	Namespace string `json:"namespace"`
}

const exportFormat = 1

const jsonSchemaHelp = `JSON output

Every --json output is UTF-8 JSON without HTML escaping. Times are RFC 3339
in UTC with fractional seconds as needed; a time that is not set is null.
State and effect are their names; the key is a UUID string; the fingerprint
is lower-case hex ("" when none was computed).

A record (ls --json prints one per line; show --json prints one; export and
import use one per line):

  {
    "version": 1,                      record schema version
    "key": "UUID",
    "tenant": "", "session": "", "turn": "", "tool": "", "discriminator": "",
    "fingerprint": "hex SHA-256 of the canonical input",
    "effect": "unkeyed|read-only|idempotent|keyed",
    "state": "pending|succeeded|failed|suppressed|unknown",
    "input": JSON or null,             the canonical input, if stored
    "input_base64": "...",             only when the input is not compact JSON
    "output": JSON or null,            the tool's result (succeeded)
    "output_base64": "...",            only when the output is not compact JSON
    "error_class": "", "error_message": "",
    "attempts": [{"id": "", "start": TIME, "end": TIME|null,
                  "class": "", "error": ""}],
    "lease": {"owner": "", "token": 0, "expires": TIME|null},
    "resolution": null | {"state": "succeeded|failed", "output": JSON|null,
                  "reason": "", "by": "", "at": TIME},
    "created": TIME, "updated": TIME, "expires": TIME
  }

Export (JSON Lines): the first line is a header
  {"agentonce_export": 1, "namespace": "UUID"}
and every other line is a record. The namespace is the journal's secret:
treat an export like the journal itself. Import reads the same format; it
rejects unknown fields, so nothing is dropped silently.

stats --json:
  {"journal": PATH, "size_bytes": N, "records": N, "expired": N,
   "attempts": N, "attempts_per_intent": F, "oldest": TIME|null,
   "newest": TIME|null, "by_state": {"pending": N, ...},
   "by_tool": {"TOOL": N, ...}}

derive --json:
  {"namespace": "UUID", "tenant": "", "session": "", "turn": "", "tool": "",
   "discriminator": "", "key": "UUID", "fingerprint": "hex",
   "canonical": JSON, "journal_state": "STATE" or "" when no record}
  with --diff: {"a": DERIVED, "b": DERIVED, "same_key": BOOL,
   "first_difference": BYTE OFFSET or -1, "differences": [{"path": "$.x",
   "a": JSON, "b": JSON}]} where a side on which the path does not exist
   omits "a" or "b"; intent fields that differ have paths "@tenant",
   "@session", "@turn", "@tool", "@discriminator"

replay --json:
  {"session": "", "tenant": "", "at": TIME,
   "intents": [{"key": "UUID", "tenant": "", "turn": "", "tool": "",
                "state": "", "effect": "", "created": TIME,
                "action": "answer|retry|wait|block|anew", "reason": ""}],
   "summary": {"answer": N, "retry": N, "wait": N, "block": N, "anew": N}}

timeline --json:
  {"session": "", "tenant": "", "at": TIME, "from": TIME, "to": TIME,
   "intents": [{"key": "UUID", "tenant": "", "turn": "", "tool": "",
                "effect": "", "state": "", "created": TIME, "updated": TIME,
                "status": "succeeded|failed|suppressed|unknown|in-progress",
                "attempts": [{"id": "", "start": TIME, "end": TIME|null,
                              "class": "CLASS|unknown|resolved|running|stopped",
                              "error": ""}],
                "marks": [{"kind": "wait|retry|suppress|resolve", "at": TIME,
                           "until": TIME|null, "text": ""}],
                "for_model": "the text the model is given",
                "reissue": "answer|retry|wait|block|anew", "reissue_reason": "",
                "attention": "unknown|blocked|"}],
   "gaps": [{"from": TIME, "to": TIME}],   idle stretches cut from the axis
   "summary": {"STATUS": N, ...}}

gc --json: {"dry_run": BOOL, "removed": N}

tail --json, one event per line:
  {"time": TIME, "kind": "before-write-ahead|after-write-ahead|after-effect|
   after-outcome|retry|in-flight|takeover|reconcile|settle|result",
   "tool": "", "session": "", "turn": "", "key": "UUID", "tries": N,
   "attempt": "", "class": "", "delay_ms": N, "status": "", "source": "",
   "error": ""}  where attempt, class, delay_ms, status, source and error
   are left out when not set; status and source are set on "result"

verify --json:
  {"journal": LOCATION, "records": N,
   "damaged": [{"key": "UUID", "problem": "what is wrong"}]}
`

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func fromOptTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// embed returns b as embedded JSON when it is compact JSON (so encoding it
// again gives the same bytes), else as base64 in the second result.
func embed(b []byte) (json.RawMessage, *string) {
	if b == nil {
		return nil, nil
	}
	if json.Valid(b) {
		var c bytes.Buffer
		if json.Compact(&c, b) == nil && bytes.Equal(c.Bytes(), b) {
			return json.RawMessage(b), nil
		}
	}
	s := base64.StdEncoding.EncodeToString(b)
	return nil, &s
}

func unembed(field string, raw json.RawMessage, b64 *string) ([]byte, error) {
	if b64 != nil {
		if len(raw) > 0 && string(raw) != "null" {
			return nil, fmt.Errorf("both %s and %s_base64 are set", field, field)
		}
		b, err := base64.StdEncoding.DecodeString(*b64)
		if err != nil {
			return nil, fmt.Errorf("%s_base64: %v", field, err)
		}
		return b, nil
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	return bytes.Clone(raw), nil
}

func toJSON(r *journal.Record) *recordJSON {
	j := &recordJSON{
		Version:       r.Version,
		Key:           r.Key.String(),
		Tenant:        r.Intent.Tenant,
		Session:       r.Intent.Session,
		Turn:          r.Intent.Turn,
		Tool:          r.Intent.Tool,
		Discriminator: r.Intent.Discriminator,
		Effect:        r.Effect.String(),
		State:         r.State.String(),
		ErrorClass:    r.ErrorClass,
		ErrorMessage:  r.ErrorMessage,
		Attempts:      make([]attemptJSON, 0, len(r.Attempts)),
		Lease: leaseJSON{
			Owner:   r.Lease.Owner,
			Token:   r.Lease.Token,
			Expires: optTime(r.Lease.Expires),
		},
		Created: r.Created.UTC(),
		Updated: r.Updated.UTC(),
		Expires: r.Expires.UTC(),
	}
	if !r.Fingerprint.IsZero() {
		j.Fingerprint = r.Fingerprint.String()
	}
	j.Input, j.InputBase64 = embed(r.Input)
	j.Output, j.OutputBase64 = embed(r.Output)
	for _, a := range r.Attempts {
		j.Attempts = append(j.Attempts, attemptJSON{
			ID: a.ID, Start: a.Start.UTC(), End: optTime(a.End), Class: a.Class, Error: a.Error,
		})
	}
	if res := r.Resolution; res != nil {
		rj := &resolutionJSON{State: res.State.String(), Reason: res.Reason, By: res.By, At: res.At.UTC()}
		rj.Output, rj.OutputBase64 = embed(res.Output)
		j.Resolution = rj
	}
	return j
}

// fromJSON turns a decoded record back into a journal.Record, checking
// every name and encoding.
func fromJSON(j *recordJSON) (journal.Record, error) {
	var r journal.Record
	var err error
	r.Version = j.Version
	if r.Version > journal.SchemaVersion {
		return r, fmt.Errorf("record version %d: %w (this agentctl reads up to %d)", r.Version, journal.ErrNewerVersion, journal.SchemaVersion)
	}
	if r.Key, err = uuid.Parse(j.Key); err != nil {
		return r, fmt.Errorf("key %q: %v", j.Key, err)
	}
	if r.Key == uuid.Nil {
		return r, errors.New("key is the nil UUID")
	}
	r.Intent = keyderive.Intent{Tenant: j.Tenant, Session: j.Session, Turn: j.Turn, Tool: j.Tool, Discriminator: j.Discriminator}
	if j.Fingerprint != "" {
		b, err := hex.DecodeString(j.Fingerprint)
		if err != nil || len(b) != len(r.Fingerprint) {
			return r, fmt.Errorf("fingerprint %q: want %d hex digits", j.Fingerprint, 2*len(r.Fingerprint))
		}
		copy(r.Fingerprint[:], b)
	}
	if r.Effect, err = journal.ParseEffect(j.Effect); err != nil {
		return r, err
	}
	if r.State, err = journal.ParseState(j.State); err != nil {
		return r, err
	}
	if r.Input, err = unembed("input", j.Input, j.InputBase64); err != nil {
		return r, err
	}
	if r.Output, err = unembed("output", j.Output, j.OutputBase64); err != nil {
		return r, err
	}
	r.ErrorClass, r.ErrorMessage = j.ErrorClass, j.ErrorMessage
	for _, a := range j.Attempts {
		r.Attempts = append(r.Attempts, journal.Attempt{
			ID: a.ID, Start: a.Start.UTC(), End: fromOptTime(a.End), Class: a.Class, Error: a.Error,
		})
	}
	r.Lease = journal.Lease{Owner: j.Lease.Owner, Token: j.Lease.Token, Expires: fromOptTime(j.Lease.Expires)}
	if rj := j.Resolution; rj != nil {
		res := &journal.Resolution{Reason: rj.Reason, By: rj.By, At: rj.At.UTC()}
		if res.State, err = journal.ParseState(rj.State); err != nil {
			return r, fmt.Errorf("resolution: %v", err)
		}
		if res.Output, err = unembed("resolution output", rj.Output, rj.OutputBase64); err != nil {
			return r, err
		}
		r.Resolution = res
	}
	r.Created, r.Updated, r.Expires = j.Created.UTC(), j.Updated.UTC(), j.Expires.UTC()
	if r.Created.IsZero() {
		return r, errors.New("created is missing")
	}
	return r, nil
}
