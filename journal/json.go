package journal

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/keyderive"
)

// recordJSON is the one JSON form of a Record (agentctl's --json, export,
// import, the inspection socket). Only ever add fields, and update
// agentctl's jsonSchemaHelp with it.
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
	// Input and Output are embedded JSON, or null; bytes that are not
	// compact JSON go in the *_base64 field instead.
	Input        json.RawMessage `json:"input"`
	InputBase64  *string         `json:"input_base64,omitempty"`
	Output       json.RawMessage `json:"output"`
	OutputBase64 *string         `json:"output_base64,omitempty"`
	ErrorClass   string          `json:"error_class"`
	ErrorMessage string          `json:"error_message"`
	Attempts     []attemptJSON   `json:"attempts"`
	Lease        leaseJSON       `json:"lease"`
	Resolution   *resolutionJSON `json:"resolution"`
	Approval     *approvalJSON   `json:"approval,omitempty"`
	Created      time.Time       `json:"created"`
	Updated      time.Time       `json:"updated"`
	Expires      time.Time       `json:"expires"`
}

type attemptJSON struct {
	ID      string     `json:"id"`
	Start   time.Time  `json:"start"`
	End     *time.Time `json:"end"`
	Class   string     `json:"class"`
	Error   string     `json:"error"`
	QuietAt *time.Time `json:"quiet_at"`
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
	Fingerprint  string          `json:"fingerprint,omitempty"`
}

type approvalJSON struct {
	Need     int              `json:"need"`
	Deadline time.Time        `json:"deadline"`
	Given    []resolutionJSON `json:"given"`
}

// MarshalJSON encodes r in the one JSON form of a record, every field
// included (agentctl help json documents it). Input and output are
// embedded when compact JSON, else base64; an Encoder with
// SetEscapeHTML(false) keeps their <, > and & byte for byte.
func (r Record) MarshalJSON() ([]byte, error) {
	j := recordJSON{
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
	j.Input, j.InputBase64 = embedJSON(r.Input)
	j.Output, j.OutputBase64 = embedJSON(r.Output)
	for _, a := range r.Attempts {
		j.Attempts = append(j.Attempts, attemptJSON{
			ID: a.ID, Start: a.Start.UTC(), End: optTime(a.End), Class: a.Class, Error: a.Error,
			QuietAt: optTime(a.QuietAt),
		})
	}
	if res := r.Resolution; res != nil {
		j.Resolution = toResolutionJSON(res)
	}
	if a := r.Approval; a != nil {
		j.Approval = &approvalJSON{Need: a.Need, Deadline: a.Deadline.UTC(), Given: make([]resolutionJSON, 0, len(a.Given))}
		for i := range a.Given {
			j.Approval.Given = append(j.Approval.Given, *toResolutionJSON(&a.Given[i]))
		}
	}
	// Unescaped: an encoder that wants HTML escaping applies it itself.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&j); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON decodes the form MarshalJSON writes, refusing an unknown
// field; what is newer than this version wraps ErrNewerVersion.
func (r *Record) UnmarshalJSON(b []byte) error {
	var j recordJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return err
	}
	rec, err := fromRecordJSON(&j)
	if err != nil {
		return err
	}
	*r = rec
	return nil
}

func fromRecordJSON(j *recordJSON) (Record, error) {
	var r Record
	var err error
	r.Version = j.Version
	if r.Version > SchemaVersion {
		return r, fmt.Errorf("record version %d: %w (this version reads up to %d)", r.Version, ErrNewerVersion, SchemaVersion)
	}
	if r.Key, err = uuid.Parse(j.Key); err != nil {
		return r, fmt.Errorf("key %q: %v", j.Key, err)
	}
	if r.Key == uuid.Nil {
		return r, errors.New("key is the nil UUID")
	}
	r.Intent = keyderive.Intent{Tenant: j.Tenant, Session: j.Session, Turn: j.Turn, Tool: j.Tool, Discriminator: j.Discriminator}
	if r.Fingerprint, err = parseFingerprint(j.Fingerprint); err != nil {
		return r, err
	}
	if r.Effect, err = parseEffect(j.Effect); err != nil {
		return r, fmt.Errorf("%v: %w", err, ErrNewerVersion)
	}
	if r.State, err = ParseState(j.State); err != nil {
		return r, fmt.Errorf("%v: %w", err, ErrNewerVersion)
	}
	if r.Input, err = unembedJSON("input", j.Input, j.InputBase64); err != nil {
		return r, err
	}
	if r.Output, err = unembedJSON("output", j.Output, j.OutputBase64); err != nil {
		return r, err
	}
	r.ErrorClass, r.ErrorMessage = j.ErrorClass, j.ErrorMessage
	for _, a := range j.Attempts {
		r.Attempts = append(r.Attempts, Attempt{
			ID: a.ID, Start: a.Start.UTC(), End: fromOptTime(a.End), Class: a.Class, Error: a.Error,
			QuietAt: fromOptTime(a.QuietAt),
		})
	}
	r.Lease = Lease{Owner: j.Lease.Owner, Token: j.Lease.Token, Expires: fromOptTime(j.Lease.Expires)}
	if rj := j.Resolution; rj != nil {
		if r.Resolution, err = fromResolutionJSON(rj); err != nil {
			return r, err
		}
	}
	if aj := j.Approval; aj != nil {
		r.Approval = &Approval{Need: aj.Need, Deadline: aj.Deadline.UTC()}
		for i := range aj.Given {
			g, err := fromResolutionJSON(&aj.Given[i])
			if err != nil {
				return r, fmt.Errorf("approval %d: %w", i+1, err)
			}
			r.Approval.Given = append(r.Approval.Given, *g)
		}
	}
	r.Created, r.Updated, r.Expires = j.Created.UTC(), j.Updated.UTC(), j.Expires.UTC()
	if r.Created.IsZero() {
		return r, errors.New("created is missing")
	}
	return r, nil
}

func toResolutionJSON(res *Resolution) *resolutionJSON {
	rj := &resolutionJSON{State: res.State.String(), Reason: res.Reason, By: res.By, At: res.At.UTC()}
	rj.Output, rj.OutputBase64 = embedJSON(res.Output)
	if !res.Fingerprint.IsZero() {
		rj.Fingerprint = res.Fingerprint.String()
	}
	return rj
}

func fromResolutionJSON(rj *resolutionJSON) (*Resolution, error) {
	res := &Resolution{Reason: rj.Reason, By: rj.By, At: rj.At.UTC()}
	var err error
	if res.State, err = ParseState(rj.State); err != nil {
		return nil, fmt.Errorf("resolution: %v: %w", err, ErrNewerVersion)
	}
	if res.Output, err = unembedJSON("resolution output", rj.Output, rj.OutputBase64); err != nil {
		return nil, err
	}
	if res.Fingerprint, err = parseFingerprint(rj.Fingerprint); err != nil {
		return nil, fmt.Errorf("resolution %v", err)
	}
	return res, nil
}

// parseFingerprint parses a fingerprint in hex, "" for none.
func parseFingerprint(s string) (keyderive.Fingerprint, error) {
	var fp keyderive.Fingerprint
	if s == "" {
		return fp, nil
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(fp) {
		return fp, fmt.Errorf("fingerprint %q: want %d hex digits", s, 2*len(fp))
	}
	copy(fp[:], b)
	return fp, nil
}

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

// embedJSON returns b as embedded JSON when it is compact, else as base64.
func embedJSON(b []byte) (json.RawMessage, *string) {
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

func unembedJSON(field string, raw json.RawMessage, b64 *string) ([]byte, error) {
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
