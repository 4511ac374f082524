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
	DefaultTTL              = 24 * time.Hour   // Options.TTL's default, as Stripe keeps keys
	DefaultLeaseTTL         = 30 * time.Second // Options.LeaseTTL's default
	DefaultRetryAfter       = time.Second      // Options.RetryAfter's default
	DefaultMaxBodyBytes     = 1 << 20          // Options.MaxBodyBytes's default
	DefaultMaxStoredBytes   = 1 << 20          // Options.MaxStoredBytes's default
	DefaultMaxResponseBytes = 32 << 20         // Options.MaxResponseBytes's default
	// DefaultReplayedHeader marks a replayed response, as Stripe names it.
	DefaultReplayedHeader = "Idempotent-Replayed"
	// KeyHeader is the draft's request header.
	KeyHeader = "Idempotency-Key"
	// AgentonceKeyHeader carries an Unkeyed tool's key from
	// downstream.Transport; it is honoured when Idempotency-Key is absent.
	AgentonceKeyHeader = "X-Agentonce-Key"
	// RequestIDHeader is recorded as the attempt's id when present.
	RequestIDHeader = "X-Request-Id"
	// DefaultSettle is Options.Settle's default, harness.DefaultSettle.
	DefaultSettle = 2 * time.Minute
	// MaxKeyLength is the longest key accepted (Stripe's limit).
	MaxKeyLength = 255
)

// Options configures a Middleware. A nil *Options means defaults; each
// field's zero value is its default.
type Options struct {
	// Tenant names the authenticated client a request comes from; it
	// scopes every key. An error answers 401. Nil means one tenant, "",
	// for every request.
	Tenant func(r *http.Request) (string, error)

	// Require reports whether a request must carry a key (else 400). Nil
	// means none must: a request without a key runs unprotected.
	Require func(r *http.Request) bool

	// Volatile lists, per route pattern ("POST /v1/charges"), the body
	// fields left out of the fingerprint: JSON paths ("metadata.trace_id")
	// or form field names.
	Volatile map[string][]string

	// Approvals names, per route pattern ("POST /v1/refunds"), how many
	// distinct people must approve a request before its handler runs:
	// until then it is answered 409 awaiting-approval, once rejected or
	// expired 422 (docs/server.md). Nil means none.
	Approvals map[string]int

	// ApprovalTTL is how long a request awaits its approvals; zero means
	// TTL.
	ApprovalTTL time.Duration

	// Wait, when positive, makes a request whose key is in flight wait up
	// to Wait for the first request's answer. Zero answers 409 at once.
	Wait time.Duration

	// RetryAfter is the Retry-After of a 409 for a key in flight, rounded
	// up to seconds. Zero means DefaultRetryAfter.
	RetryAfter time.Duration

	// TTL is how long a stored response answers its key, from the first
	// request with it; at least LeaseTTL. Zero means DefaultTTL.
	TTL time.Duration

	// LeaseTTL is the running handler's lease, renewed every LeaseTTL/3.
	// Zero means DefaultLeaseTTL.
	LeaseTTL time.Duration

	// MaxBodyBytes caps the request body (else 413). Zero means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64

	// MaxStoredBytes caps the response body (and the canonical request
	// body) kept in the record; a larger one goes to Blobs, or without
	// Blobs only its hash is kept and a retry gets 500. Zero means
	// DefaultMaxStoredBytes.
	MaxStoredBytes int

	// MaxResponseBytes caps the response body the middleware buffers (the
	// client then gets 500). Zero means DefaultMaxResponseBytes.
	MaxResponseBytes int

	// Blobs keeps response bodies above MaxStoredBytes. Nil means none.
	Blobs BlobStore

	// StoreServerErrors stores and replays 5xx responses. False (the
	// default) settles them failed ("released"): the next request runs
	// again.
	StoreServerErrors bool

	// StoredHeaders names response headers kept and replayed beside
	// Content-Type, Content-Encoding, Content-Language, Content-Location,
	// Location, ETag, Last-Modified, Cache-Control and Vary.
	StoredHeaders []string

	// ReplayedHeader is set to "true" on a replayed response. Empty means
	// DefaultReplayedHeader.
	ReplayedHeader string

	// Owner names this process in the journal's leases. Empty means the
	// host name, the pid and a random suffix.
	Owner string

	// Key, when set, takes the key from the request and its body instead
	// of a header, and every request must yield one (else 400, or 401 for
	// ErrSignature): the event id of a webhook delivery (package inbox).
	Key func(r *http.Request, body []byte) (string, error)

	// InTx runs the handler inside the transaction that records its
	// response (postgres.TxFrom, bolt.TxFrom): a panic, a 5xx or a crash
	// leaves nothing behind. On bbolt the handler holds the writer lock.
	// New refuses it on a store without the capability.
	InTx bool

	// Reconcile, when set, is asked what became of a request whose run
	// ended without a recorded answer, by the harness's rules: Happened
	// with the answer to replay, DidNotHappen, or CannotTell. A panic is a
	// CannotTell. Not with InTx. See docs/server.md, "Reconcile".
	Reconcile func(r *http.Request, key string) downstream.Reconciliation

	// Settle is how long after a run starts its effect may still land
	// where Reconcile looks. Zero means DefaultSettle.
	Settle time.Duration

	// ErrorLog receives what cannot be told to the client and every
	// outcome left unknown. Nil means log.Printf.
	ErrorLog func(format string, args ...any)

	// OnUnknown, when set, is told of every record the middleware settles
	// unknown, on the request's goroutine: it must be quick.
	OnUnknown func(ctx context.Context, rec journal.Record)
}
