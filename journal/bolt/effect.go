package bolt

// The effect in the outcome's transaction (CompleteWith): the key's stripe,
// then bbolt's writer lock (db.Update, never db.Batch, which may run a
// function twice), both held while the effect runs, so the fence holds
// until the commit (docs/journal.md, "Effects in the outcome's transaction").

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/internal/codec"
	"github.com/agentonce/agentonce/journal/internal/machine"
)

type txCtxKey struct{}

// TxFrom returns the write transaction that CompleteWith runs an effect in,
// from the effect's context; ok is false outside such an effect. The
// effect must not commit or roll it back.
func TxFrom(ctx context.Context) (tx *bbolt.Tx, ok bool) {
	tx, ok = ctx.Value(txCtxKey{}).(*bbolt.Tx)
	return tx, ok
}

// errNoTx is returned by an InTx effect run outside CompleteWith.
var errNoTx = errors.New("bolt: InTx effect run outside a journal transaction (register it as harness.Tool.InTx on a bbolt journal)")

// InTx adapts an effect written against bbolt to the harness's Tool.InTx:
//
//	harness.Tool{Name: "credit", Effect: journal.Keyed, InTx: bolt.InTx(credit)}
//
// fn writes through tx only, to buckets of its own (see CompleteWith).
func InTx(fn func(ctx context.Context, tx *bbolt.Tx, input json.RawMessage) (json.RawMessage, error)) func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		tx, ok := TxFrom(ctx)
		if !ok {
			return nil, errNoTx
		}
		return fn(ctx, tx, input)
	}
}

// journalBuckets are the file's own buckets, which an effect leaves alone.
var journalBuckets = [...][]byte{bucketMeta, bucketRecords, bucketIndex, bucketCounts, bucketFresh}

// CompleteWith runs effect inside the write transaction that records the
// intent of key as succeeded with effect's output: both commit, durably,
// or neither does. The harness and the idempotency middleware
// (Options.InTx) look for this capability on a store; effect finds the
// transaction with TxFrom.
//
// It first checks the fence (journal.ErrNotFound, journal.ErrFenced), so
// a stale owner never runs the effect. If effect returns an error, the
// transaction is rolled back and the error returned as is: the effect
// provably did not happen. If effect panics, the transaction is rolled
// back and the panic raised again from CompleteWith (runtime.Goexit rolls
// it back as it unwinds). A process killed while effect runs leaves the
// record pending and retakable, and none of effect's writes.
//
// effect writes only to buckets of its own: removing or replacing one of
// the journal's, or changing its version or namespace, is refused
// (journal.ErrInvalid) and rolled back. effect must not call the store or
// wait for anything that does: it holds the key's lock and bbolt's writer
// lock. Keep it short and local; the lease need not be renewed.
func (s *Store) CompleteWith(ctx context.Context, key uuid.UUID, token uint64,
	effect func(ctx context.Context) ([]byte, error)) (journal.Record, error) {
	if key == uuid.Nil {
		return journal.Record{}, fmt.Errorf("%w: complete with: zero key", journal.ErrInvalid)
	}
	if err := s.enter(ctx); err != nil {
		return journal.Record{}, err
	}
	defer s.exit()
	if s.readOnly {
		return journal.Record{}, fmt.Errorf("journal %s: %w: complete with %s", s.path, journal.ErrReadOnly, key)
	}
	st := s.stripe(key)
	st.mu.Lock()
	defer st.mu.Unlock()
	var r journal.Record
	var panicked *effectPanic
	err := s.writeTx(func(tx *bbolt.Tx) error {
		cur := st.overlay[key].rec // read only, as in current
		if cur == nil {
			var err error
			if cur, err = s.readTx(tx, key); err != nil {
				return err
			}
			if cur == nil {
				return fmt.Errorf("%w: complete with %s", journal.ErrNotFound, key)
			}
		}
		c := journal.Completion{Key: key, Token: token, State: journal.StateSucceeded}
		if _, err := machine.ApplyCompletion(cur, &c, s.now()); err != nil {
			return err // fenced: the effect does not run
		}
		var own [len(journalBuckets)]*bbolt.Bucket
		for i, name := range journalBuckets {
			own[i] = tx.Bucket(name) // a write transaction keeps each bucket it opens
		}
		out, err := runEffect(ctx, tx, effect, &panicked)
		if err != nil {
			return err
		}
		if err := s.checkOwnBuckets(tx, own[:], key); err != nil {
			return err
		}
		c.Output = out
		if r, err = machine.ApplyCompletion(cur, &c, s.now()); err != nil {
			return err
		}
		r.Version = journal.SchemaVersion
		return s.indexPut(tx, &r, codec.Encode(nil, &r), false)
	})
	if panicked != nil {
		panic(panicked.value) // the transaction is rolled back
	}
	if err != nil {
		return journal.Record{}, err
	}
	// On file now: the overlay's copy and its pending-log frame are stale.
	delete(st.overlay, key)
	s.pendlog.drop(key)
	return r, nil
}

// effectPanic carries an effect's panic out of the transaction.
type effectPanic struct{ value any }

func (p *effectPanic) Error() string { return fmt.Sprintf("the effect panicked: %v", p.value) }

// runEffect runs effect with tx in its context. A panic of effect is kept
// in *panicked and returned as the error, so that the transaction rolls
// back (writeTx would take a panic for a damaged page). runtime.Goexit is
// not caught: the transaction rolls back as it unwinds.
func runEffect(ctx context.Context, tx *bbolt.Tx, effect func(context.Context) ([]byte, error), panicked **effectPanic) (out []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			*panicked = &effectPanic{value: v}
			out, err = nil, *panicked
		}
	}()
	return effect(context.WithValue(ctx, txCtxKey{}, tx))
}

// checkOwnBuckets refuses an effect that removed or replaced one of the
// journal's buckets (own holds them as opened before it ran) or changed
// its version or namespace.
func (s *Store) checkOwnBuckets(tx *bbolt.Tx, own []*bbolt.Bucket, key uuid.UUID) error {
	for i, name := range journalBuckets {
		if own[i] == nil || tx.Bucket(name) != own[i] {
			return fmt.Errorf("journal %s: %w: complete with %s: the effect removed or replaced the journal's bucket %q (an effect writes only to buckets of its own)", s.path, journal.ErrInvalid, key, name)
		}
	}
	meta := own[0]
	if v, _ := binary.Uvarint(meta.Get(metaVersion)); v != layoutVersion || !bytes.Equal(meta.Get(metaNamespace), s.ns[:]) {
		return fmt.Errorf("journal %s: %w: complete with %s: the effect changed the journal's meta bucket (an effect writes only to buckets of its own)", s.path, journal.ErrInvalid, key)
	}
	return nil
}

// View runs fn in a read transaction of the journal's file, to read the
// buckets CompleteWith effects write. fn must not write, nor keep tx past
// its return; a long read holds up writes when the file must grow. A panic
// in fn is not caught.
func (s *Store) View(ctx context.Context, fn func(tx *bbolt.Tx) error) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.exit()
	return s.db.View(fn)
}
