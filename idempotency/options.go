package idempotency

import (
	"net/http"
	"time"
)

// Defaults of Options.
const (
	// DefaultTTL is how long a stored response is kept, counted from the
	// first request with its key: Stripe keeps keys at least 24 hours.
	DefaultTTL = 24 * time.Hour
	// DefaultLeaseTTL is the lease a running handler holds on its key. It
	// is renewed every third of it while the handler runs, so it bounds
	// how long a dead process's key stays "in flight", not how long a
	// handler may take.
	DefaultLeaseTTL = 30 * time.Second
	// DefaultRetryAfter is the Retry-After sent with a 409 for a key whose
	// first request is still running.
	DefaultRetryAfter = time.Second
	// DefaultMaxBodyBytes caps the request body the middleware reads.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultMaxStoredBytes caps a response body kept in the record, as
	// large as the request body a request may carry: far above a JSON
	// answer's. A larger one goes to Options.Blobs.
	DefaultMaxStoredBytes = 1 << 20
	// DefaultMaxResponseBytes caps a response body the middleware buffers.
	DefaultMaxResponseBytes = 32 << 20
	// DefaultReplayedHeader marks a replayed response, as Stripe names it.
	DefaultReplayedHeader = "Idempotent-Replayed"
	// KeyHeader is the draft's request header.
	KeyHeader = "Idempotency-Key"
	// AgentonceKeyHeader is where the harness's Transport sends the key of
	// an Unkeyed tool (see downstream.Transport); it is honoured when
	// Idempotency-Key is absent.
	AgentonceKeyHeader = "X-Agentonce-Key"
	// RequestIDHeader is recorded as the attempt's id when present, so the
	// caller's journal and this one name the same attempt.
	RequestIDHeader = "X-Request-Id"
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

	// Volatile lists, per route pattern (r.Pattern as ServeMux reports it,
	// e.g. "POST /v1/charges"), the body fields left out of the
	// fingerprint: JSON property paths as keyderive.NewNormalizer takes
	// them ("metadata.trace_id"), or form field names. A retry that
	// differs only in them is the same request.
	Volatile map[string][]string

	// Wait, when positive, makes a request whose key is in flight wait up
	// to Wait for the first request's answer and send it, rather than a
	// 409 at once. Zero (the default) answers 409 with Retry-After.
	Wait time.Duration

	// RetryAfter is the Retry-After of a 409 for a key in flight. Zero
	// means DefaultRetryAfter (1s); it is rounded up to whole seconds.
	RetryAfter time.Duration

	// TTL is how long a stored response is kept, from the first request
	// with its key; after it, the key is new again. Zero means DefaultTTL
	// (24h). A record whose outcome is unknown is kept past it until an
	// operator resolves it.
	TTL time.Duration

	// LeaseTTL is the running handler's lease. Zero means DefaultLeaseTTL
	// (30s). It is renewed every LeaseTTL/3; a process that dies leaves
	// its keys in flight for at most LeaseTTL (on bbolt, until it reopens
	// the journal, which ends the dead process's leases).
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
	// response, on a store that offers one: on PostgreSQL the handler
	// writes through postgres.TxFrom(r.Context()), on a bbolt file through
	// bolt.TxFrom(r.Context()) into buckets of its own, and it must have no
	// other effect. Its writes and the stored response then commit
	// together, so a handler that panics or answers 5xx, or a process that
	// dies, leaves nothing behind and the next request with the key runs it
	// again; and the write-ahead need not be durable before the handler
	// runs, so a new key costs one commit, the handler's own. On bbolt the handler holds the file's single writer lock while
	// it runs: every other request's journal write waits for it, so it must
	// be short and local, and must not call the journal. New refuses InTx
	// on a store without the capability.
	InTx bool

	// ErrorLog receives what cannot be told to the client (a record that
	// could not be completed after its response was built). Nil means the
	// log package's standard logger.
	ErrorLog func(format string, args ...any)
}
