package main

import (
	"encoding/json"
	"time"
)

// recordJSON is a record's JSON form as a reader of `agentctl help json`
// sees it, written apart from journal.Record's MarshalJSON so that the
// tests check the documented schema rather than the code against itself.
type recordJSON struct {
	Version      int             `json:"version"`
	Key          string          `json:"key"`
	Tool         string          `json:"tool"`
	Fingerprint  string          `json:"fingerprint"`
	Effect       string          `json:"effect"`
	State        string          `json:"state"`
	Input        json.RawMessage `json:"input"`
	InputBase64  *string         `json:"input_base64"`
	Output       json.RawMessage `json:"output"`
	OutputBase64 *string         `json:"output_base64"`
	ErrorClass   string          `json:"error_class"`
	ErrorMessage string          `json:"error_message"`
	Attempts     []attemptJSON   `json:"attempts"`
	Lease        leaseJSON       `json:"lease"`
	Resolution   *resolutionJSON `json:"resolution"`
	Approval     *approvalJSON   `json:"approval"`
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
	State       string          `json:"state"`
	Output      json.RawMessage `json:"output"`
	Reason      string          `json:"reason"`
	By          string          `json:"by"`
	At          time.Time       `json:"at"`
	Fingerprint string          `json:"fingerprint"`
}

type approvalJSON struct {
	Need     int              `json:"need"`
	Deadline time.Time        `json:"deadline"`
	Given    []resolutionJSON `json:"given"`
}
