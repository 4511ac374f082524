package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	bolt "go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/internal/pgtest"
	"github.com/agentonce/agentonce/journal"
	jbolt "github.com/agentonce/agentonce/journal/bolt"
	"github.com/agentonce/agentonce/journal/postgres"
	"github.com/agentonce/agentonce/keyderive"
)

const benchBody = `{"amount":4900,"currency":"usd","customer":"cus_8812","description":"order 55102"}`

// bareCharge is the handler every benchmark runs: it answers a charge
// with a ~100 B JSON body. effect, when set, is the handler's own write.
func bareCharge(effect func(r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if effect != nil {
			if err := effect(r); err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"id":"ch_3Nq8ZL2eZvKYlo2C0x1a","object":"charge","status":"succeeded","amount":4900}`))
	}
}

// serveOnce sends one request straight to h (no network: the
// middleware's cost, not loopback's).
func serveOnce(b *testing.B, h http.Handler, key string) {
	req := httptest.NewRequest(http.MethodPost, "/v1/charges", strings.NewReader(benchBody))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		b.Fatalf("status %d: %s", w.Code, w.Body)
	}
}

func muxFor(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/charges", h)
	return mux
}

var benchSeq atomic.Int64

func nextKey() string { return fmt.Sprintf("key-%d", benchSeq.Add(1)) }

// BenchmarkMiddleware pairs the middleware with the bare handler on each
// store: baseline is the bare handler plus one raw commit of its own (the
// cheapest durable effect), agentonce the bare handler behind the
// middleware (a durable Begin and a durable Complete), agentonce-effect
// baseline's handler behind it (agentonce-intx's pair), replay a repeated
// key beside raw-get, one journal Get, and raw-get-served, one Get
// through the replay's request plumbing.
func BenchmarkMiddleware(b *testing.B) {
	b.Run("bbolt", func(b *testing.B) {
		dir := b.TempDir()
		store, err := journal.Open(context.Background(), filepath.Join(dir, "server.journal"), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		db, err := bolt.Open(filepath.Join(dir, "raw.db"), 0o600, &bolt.Options{Timeout: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		rawCommit := func(*http.Request) error {
			return db.Update(func(tx *bolt.Tx) error {
				bk, err := tx.CreateBucketIfNotExists([]byte("charges"))
				if err != nil {
					return err
				}
				return bk.Put([]byte(nextKey()), []byte(benchBody))
			})
		}
		// The handler's charge written through the journal's own
		// transaction, into a bucket of its own in the journal's file.
		inTx := func(r *http.Request) error {
			tx, ok := jbolt.TxFrom(r.Context())
			if !ok {
				return fmt.Errorf("no transaction")
			}
			bk, err := tx.CreateBucketIfNotExists([]byte("charges"))
			if err != nil {
				return err
			}
			return bk.Put([]byte(nextKey()), []byte(benchBody))
		}
		benchPairs(b, store, rawCommit, inTx)
		// 32 clients at once: the journal's group commit beside bbolt's
		// Batch, each request's raw commit coalesced with its neighbours'.
		b.Run("parallel", func(b *testing.B) {
			m, err := idempotency.New(store, nil)
			if err != nil {
				b.Fatal(err)
			}
			batched := func(*http.Request) error {
				return db.Batch(func(tx *bolt.Tx) error {
					bk, err := tx.CreateBucketIfNotExists([]byte("charges"))
					if err != nil {
						return err
					}
					return bk.Put([]byte(nextKey()), []byte(benchBody))
				})
			}
			run := func(name string, h http.Handler, keyed bool) {
				b.Run(name, func(b *testing.B) {
					b.ReportAllocs()
					b.SetParallelism(16)
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							k := ""
							if keyed {
								k = nextKey()
							}
							serveOnce(b, h, k)
						}
					})
				})
			}
			run("baseline", muxFor(bareCharge(batched)), false)
			run("agentonce", muxFor(m.Handler(bareCharge(nil))), true)
		})
	})
	b.Run("postgres", func(b *testing.B) {
		url := pgtest.URL(b)
		schema := pgtest.Schema(b, "agentonce_idembench_")
		store := openPG(b, url, schema)
		pool, err := pgxpool.New(context.Background(), url)
		if err != nil {
			b.Fatal(err)
		}
		defer pool.Close()
		table := pgx.Identifier{schema, "charges"}.Sanitize()
		if _, err := pool.Exec(context.Background(), `CREATE TABLE `+table+` (key text PRIMARY KEY, body text)`); err != nil {
			b.Fatal(err)
		}
		insert := `INSERT INTO ` + table + ` VALUES ($1, $2)`
		rawCommit := func(r *http.Request) error {
			_, err := pool.Exec(r.Context(), insert, nextKey(), benchBody)
			return err
		}
		inTx := func(r *http.Request) error {
			tx, ok := postgres.TxFrom(r.Context())
			if !ok {
				return fmt.Errorf("no transaction")
			}
			_, err := tx.Exec(r.Context(), insert, nextKey(), benchBody)
			return err
		}
		benchPairs(b, store, rawCommit, inTx)
	})
}

func benchPairs(b *testing.B, store journal.Store, rawCommit, inTx func(*http.Request) error) {
	m, err := idempotency.New(store, nil)
	if err != nil {
		b.Fatal(err)
	}
	bare := muxFor(bareCharge(nil))
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			serveOnce(b, bare, "")
		}
	})
	b.Run("baseline", func(b *testing.B) {
		h := muxFor(bareCharge(rawCommit))
		b.ReportAllocs()
		for b.Loop() {
			serveOnce(b, h, "")
		}
	})
	b.Run("agentonce", func(b *testing.B) {
		h := muxFor(m.Handler(bareCharge(nil)))
		b.ReportAllocs()
		for b.Loop() {
			serveOnce(b, h, nextKey())
		}
	})
	// The middleware around baseline's handler, its raw commit included:
	// the same work as agentonce-intx, whose handler writes the same row
	// but inside the transaction that records the response. agentonce's
	// handler writes nothing, so it is not agentonce-intx's pair.
	b.Run("agentonce-effect", func(b *testing.B) {
		h := muxFor(m.Handler(bareCharge(rawCommit)))
		b.ReportAllocs()
		for b.Loop() {
			serveOnce(b, h, nextKey())
		}
	})
	b.Run("journal-begin-complete", func(b *testing.B) {
		// The journal's two durable writes alone, as the middleware makes
		// them: what agentonce costs beyond bare, less the HTTP plumbing.
		b.ReportAllocs()
		for b.Loop() {
			k := uuid.New()
			res, err := store.Begin(context.Background(), journal.BeginRequest{Key: k, Owner: "bench", AttemptID: "a",
				Intent: keyderive.Intent{Tenant: "", Session: nextKey(), Tool: "POST /v1/charges"}, Durable: true, Guard: journal.GuardOff})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := store.Complete(context.Background(), journal.Completion{Key: k, Token: res.Token,
				State: journal.StateSucceeded, Output: []byte(benchBody)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	if inTx != nil {
		// The handler's own insert and the stored response in one
		// transaction: beside baseline, whose handler makes the insert.
		mtx, err := idempotency.New(store, &idempotency.Options{InTx: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Run("agentonce-intx", func(b *testing.B) {
			h := muxFor(mtx.Handler(bareCharge(inTx)))
			b.ReportAllocs()
			for b.Loop() {
				serveOnce(b, h, nextKey())
			}
		})
	}
	h := muxFor(m.Handler(bareCharge(nil)))
	key := nextKey()
	serveOnce(b, h, key)
	var jkey = lastKey(b, store)
	b.Run("replay", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			serveOnce(b, h, key)
		}
	})
	b.Run("raw-get", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := store.Get(context.Background(), jkey); err != nil {
				b.Fatal(err)
			}
		}
	})
	// raw-get given the replay's plumbing: the same request, recorder and
	// mux, and a handler that answers with one journal Get's stored bytes.
	// The floor of any replay served from the journal; replay beside it
	// reads the middleware's own work, which replay beside raw-get does
	// not (replay pays the plumbing, ~bare, and raw-get does not).
	b.Run("raw-get-served", func(b *testing.B) {
		h := muxFor(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec, err := store.Get(r.Context(), jkey)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(rec.Output)
		}))
		b.ReportAllocs()
		for b.Loop() {
			serveOnce(b, h, key)
		}
	})
}

// lastKey is the journal key of the newest record.
func lastKey(b *testing.B, store journal.Store) (k [16]byte) {
	for r, err := range store.List(context.Background(), journal.Filter{Limit: 1}) {
		if err != nil {
			b.Fatal(err)
		}
		k = r.Key
	}
	return k
}
