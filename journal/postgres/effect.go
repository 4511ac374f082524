package postgres

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentonce/agentonce/journal"
)

// The store registers itself for postgres:// and postgresql:// locations.
func init() {
	open := func(ctx context.Context, location string, jo journal.Options, o Options) (journal.Store, error) {
		o.Journal = jo
		return Open(ctx, location, &o)
	}
	journal.Register("postgres", open)
	journal.Register("postgresql", open)
}

type txCtxKey struct{}

// TxFrom returns the transaction that CompleteWith runs an effect in, from
// the effect's context; ok is false outside such an effect.
func TxFrom(ctx context.Context) (tx pgx.Tx, ok bool) {
	tx, ok = ctx.Value(txCtxKey{}).(pgx.Tx)
	return tx, ok
}

// CompleteWith is CompleteInTx for callers that know no pgx type: effect
// finds the transaction with TxFrom. The harness looks for it on a store,
// so a store that wraps this one keeps the capability by forwarding it.
func (s *Store) CompleteWith(ctx context.Context, key uuid.UUID, token uint64,
	effect func(ctx context.Context) ([]byte, error)) (journal.Record, error) {
	return s.CompleteInTx(ctx, key, token, func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
		return effect(context.WithValue(ctx, txCtxKey{}, tx))
	})
}

// errNoTx is returned by an InTx effect run outside CompleteWith.
var errNoTx = errors.New("postgres: InTx effect run outside a journal transaction (register it as harness.Tool.InTx on a PostgreSQL journal)")

// InTx adapts an effect written against pgx to the harness's Tool.InTx:
//
//	harness.Tool{Name: "credit", Effect: journal.Keyed, InTx: postgres.InTx(credit)}
//
// fn must write through tx only and must not commit or roll it back.
func InTx(fn func(ctx context.Context, tx pgx.Tx, input json.RawMessage) (json.RawMessage, error)) func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		tx, ok := TxFrom(ctx)
		if !ok {
			return nil, errNoTx
		}
		return fn(ctx, tx, input)
	}
}
