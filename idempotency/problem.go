package idempotency

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// ProblemBase prefixes every problem type: a section of docs/server.md.
const ProblemBase = "https://github.com/agentonce/agentonce/blob/main/docs/server.md#"

// Problem types, the fragment after ProblemBase.
const (
	ProblemKeyRequired     = "key-required"            // 400
	ProblemKeyInvalid      = "key-invalid"             // 400
	ProblemUnauthenticated = "unauthenticated"         // 401
	ProblemBodyTooLarge    = "body-too-large"          // 413
	ProblemKeyReused       = "key-reused"              // 422
	ProblemInFlight        = "in-flight"               // 409
	ProblemOutcomeUnknown  = "outcome-unknown"         // 500
	ProblemNotRecorded     = "outcome-not-recorded"    // 500
	ProblemBodyUnavailable = "stored-body-unavailable" // 500
	ProblemJournal         = "journal-unavailable"     // 503
	ProblemFailed          = "failed"                  // 500
	ProblemNotRun          = "not-run"                 // 404, a lookup's
	ProblemLookupInvalid   = "lookup-invalid"          // 400, a lookup's
	// Of a request that needs approval (Options.Approvals).
	ProblemAwaitingApproval = "awaiting-approval" // 409
	ProblemApprovalRejected = "approval-rejected" // 422
	ProblemApprovalExpired  = "approval-expired"  // 422
)

// problem is an RFC 9457 problem-details body.
type problem struct {
	Type       string           `json:"type"`
	Title      string           `json:"title"`
	Status     int              `json:"status"`
	Detail     string           `json:"detail,omitempty"`
	Key        string           `json:"idempotency_key,omitempty"`
	JournalKey string           `json:"journal_key,omitempty"`
	Approval   *approvalProblem `json:"approval,omitempty"`
}

var problemTitles = map[string]string{
	ProblemKeyRequired:      "Idempotency-Key is required",
	ProblemKeyInvalid:       "Idempotency-Key is malformed",
	ProblemUnauthenticated:  "The request's client could not be identified",
	ProblemBodyTooLarge:     "Request body too large",
	ProblemKeyReused:        "Idempotency-Key reused with a different request",
	ProblemInFlight:         "A request with this Idempotency-Key is being processed",
	ProblemOutcomeUnknown:   "The outcome of the first request with this Idempotency-Key is unknown",
	ProblemNotRecorded:      "The response could not be recorded",
	ProblemBodyUnavailable:  "The stored response body is not available",
	ProblemJournal:          "The idempotency journal is unavailable",
	ProblemFailed:           "The first request with this Idempotency-Key failed",
	ProblemAwaitingApproval: "The request awaits approval and has not run",
	ProblemApprovalRejected: "The request was rejected by an approver and was not run",
	ProblemApprovalExpired:  "The request was not approved in time and was not run",
	ProblemNotRun:           "No request with this Idempotency-Key took effect",
	ProblemLookupInvalid:    "The lookup names no route this server protects",
}

// writeProblem sends a problem-details response (Retry-After if positive).
func writeProblem(w http.ResponseWriter, status int, kind string, p problem, retryAfter time.Duration) {
	p.Type, p.Title, p.Status = ProblemBase+kind, problemTitles[kind], status
	body, _ := json.Marshal(p) // strings, ints and a time of this era: cannot fail
	h := w.Header()
	if headerValue(h, LookupHeader) == "succeeded" { // a problem is never a lookup's stored answer
		h.Del(LookupHeader)
	}
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64((retryAfter+time.Second-1)/time.Second), 10))
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
