package idempotency

import (
	"context"
	"net/http"
	"time"

	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
)

// Defaults of Options.
const (
	// DefaultTTL is how long a stored response is kept, counted from the
	// first request with its key: Stripe keeps keys at least 24 hours.
	DefaultTTL = 24 * time.Hour
	// DefaultLeaseTTL is a running handler's lease on its key, renewed
	// every third of it: it bounds how long a dead process's key stays in
	// flight, not how long a handler may take.
	DefaultLeaseTTL = 30 * time.Second
	// DefaultRetryAfter is the Retry-After sent with a 409 for a key whose
	// first request is still running.
	DefaultRetryAfter = time.Second
	// DefaultMaxBodyBytes caps the request body the middleware reads.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultMaxStoredBytes caps a response body kept in the record: the
	// request body's bound, far above a JSON answer's.
	DefaultMaxStoredBytes = 1 << 20
	// DefaultMaxResponseBytes caps a response body the middleware buffers.
	DefaultMaxResponseBytes = 32 << 20
	// DefaultReplayedHeader marks a replayed response, as Stripe names it.
	DefaultReplayedHeader = "Idempotent-Replayed"
	// KeyHeader is the draft's request header.
	KeyHeader = "Idempotency-Key"
	// AgentonceKeyHeader carries an Unkeyed tool's key from the harness's
	// downstream.Transport; it is honoured when Idempotency-Key is absent.
	AgentonceKeyHeader = "X-Agentonce-Key"
	// RequestIDHeader is recorded as the attempt's id when present, so the
	// caller's journal and this one name the same attempt.
	RequestIDHeader = "X-Request-Id"
	// DefaultSettle is Options.Settle when it is zero: the harness's
	// settle window (harness.DefaultSettle).
	DefaultSettle = 2 * time.Minute
	// MaxKeyLength is the longest key accepted (Stripe's limit).
	MaxKeyLength = 255
)

// Options configures a Middleware. A nil *Options means defaults; each
// field's zero value is its default.
type Options struct {
	// Tenant names the authenticated client a request comes from; it
	// scopes every key, so one client can never read another's stored
	// response. An error answers 401 and runs nothing. Nil means one
	// tenant, "", for every request: right only behind a gateway that
	// already gives each client its own server.
	Tenant func(r *http.Request) (string, error)

	// Require reports whether a request must carry a key; one that must
	// and does not gets 400. Nil means no request must: a request without
	// a key runs unprotected, as Stripe's API treats it.
	Require func(r *http.Request) bool

	// Volatile lists, per route pattern (r.Pattern, "POST /v1/charges"),
	// the body fields left out of the fingerprint: JSON paths as
	// keyderive.NewNormalizer takes them ("metadata.trace_id"), or form
	// field names.
	Volatile map[string][]string

	// Approvals names, per route pattern (r.Pattern, "POST /v1/refunds"),
	// how many distinct people must approve a request before its handler
	// runs. Such a request records its intent awaiting approval and is
	// answered 409 awaiting-approval, naming the approver's command; sent
	// again once approved, it runs once; rejected or past ApprovalTTL it is
	// answered 422 for good (docs/server.md). A request on such a route
	// without a key gets 400; with Approvals set, a request with no route
	// pattern (the middleware wraps the mux) gets 500 and does not run.
	// GET, HEAD, OPTIONS and TRACE pass through. Nil means no route needs
	// approval.
	Approvals map[string]int

	// ApprovalTTL is how long a request awaits its approvals. Zero means
	// TTL.
	ApprovalTTL time.Duration

	// Wait, when positive, makes a request whose key is in flight wait up
	// to Wait for the first request's answer and send it, rather than a
	// 409 at once. Zero (the default) answers 409 with Retry-After.
	Wait time.Duration

	// RetryAfter is the Retry-After of a 409 for a key in flight. Zero
	// means DefaultRetryAfter (1s); it is rounded up to whole seconds.
	RetryAfter time.Duration

	// TTL is how long a stored response answers its key, from the first
	// request with it; then the key is new again, but never while that
	// request runs: a handler slower than TTL leaves its key new at its
	// answer. It must be at least LeaseTTL (New refuses less). Zero means
	// DefaultTTL (24h). An unknown outcome is kept until an operator
	// resolves it; the store may keep other records longer (docs/server.md).
	TTL time.Duration

	// LeaseTTL is the running handler's lease, renewed every LeaseTTL/3: a
	// process that dies leaves its keys in flight for at most LeaseTTL (on
	// bbolt, until the journal is reopened). Zero means DefaultLeaseTTL
	// (30s).
	LeaseTTL time.Duration

	// MaxBodyBytes caps the request body; a larger one gets 413 and does
	// not run. Zero means DefaultMaxBodyBytes (1 MiB).
	MaxBodyBytes int64

	// MaxStoredBytes caps the response body (and the canonical request
	// body) kept in the journal record. A larger response body is kept in
	// Blobs, the record holding its SHA-256 and Blobs' reference. Without
	// Blobs only the hash is kept: the first client gets the body, ErrorLog
	// is told (the key, the route, the size), and every retry gets 500
	// stored-body-unavailable; the handler never runs twice. Zero means
	// DefaultMaxStoredBytes (1 MiB).
	MaxStoredBytes int

	// MaxResponseBytes caps the response body the middleware buffers
	// before it records it; a handler that writes more gets
	// ErrResponseTooLarge from Write, and the client gets 500. Zero means
	// DefaultMaxResponseBytes (32 MiB).
	MaxResponseBytes int

	// Blobs keeps response bodies above MaxStoredBytes. Nil means none.
	Blobs BlobStore

	// StoreServerErrors stores and replays 5xx responses like any other.
	// False (the default) does not: the record is settled failed with
	// class "released" and the next request with the key runs the handler
	// again. That is right for a handler whose 5xx means nothing was
	// committed (a rolled-back transaction); a handler whose 5xx may
	// follow a partial effect should set it.
	StoreServerErrors bool

	// StoredHeaders names the response headers kept and replayed, in
	// addition to Content-Type, Content-Encoding, Content-Language,
	// Content-Location, Location, ETag, Last-Modified, Cache-Control and
	// Vary. Others (Date, Set-Cookie, Content-Length, …) are not kept.
	StoredHeaders []string

	// ReplayedHeader is set to "true" on a replayed response. Empty means
	// DefaultReplayedHeader ("Idempotent-Replayed").
	ReplayedHeader string

	// Owner names this process in the journal's leases. Empty means the
	// host name, the pid and a random suffix.
	Owner string

	// Key, when set, takes the key from the request and its body instead
	// of the Idempotency-Key header, and every request must yield one (an
	// error answers 400, or 401 when it wraps ErrSignature): the event id
	// of a webhook delivery, as inbox.New sets it.
	Key func(r *http.Request, body []byte) (string, error)

	// InTx runs the handler inside the transaction that records its
	// response: it writes through postgres.TxFrom(r.Context()) or, into
	// buckets of its own, bolt.TxFrom(r.Context()), and has no other
	// effect. A panic, a 5xx or a crash then leaves nothing behind and the
	// next request runs again, and a new key costs one commit. On bbolt the
	// handler holds the file's single writer lock: it must be short, local,
	// and not call the journal. New refuses InTx on a store without it.
	InTx bool

	// Reconcile, when set, is asked what became of a request whose run
	// ended without a recorded answer (a panic, a server stopped
	// mid-request), once past the run's settle window, by the harness's
	// rules: the application looks in its own data and answers
	// downstream.Happened with the answer to replay (ResolvedResponse's,
	// or JSON answered 200), DidNotHappen (the request runs again only
	// when a second one, Settle later, agrees) or CannotTell (unknown, as
	// without it). r's body is the request's; a panic is a CannotTell. New
	// refuses it with InTx. See docs/server.md, "Reconcile".
	Reconcile func(r *http.Request, key string) downstream.Reconciliation

	// Settle is how long after a run starts its effect may still land
	// where Reconcile looks (a replica's lag, a queue), and how far apart
	// the two "did not happen" must be. Zero means DefaultSettle (2m).
	Settle time.Duration

	// ErrorLog receives what cannot be told to the client (a response that
	// could not be recorded, or only its hash) and every outcome left
	// unknown for an operator. Nil means log.Printf.
	ErrorLog func(format string, args ...any)

	// OnUnknown, when set, is told of every record the middleware settles
	// unknown (the handler panicked, its process died mid-request, or its
	// response could not be kept), as stored: only an operator settles it
	// (agentctl resolve). It runs on the request's goroutine and must be
	// quick, as notify.Webhook's Record is.
	OnUnknown func(ctx context.Context, rec journal.Record)
}
