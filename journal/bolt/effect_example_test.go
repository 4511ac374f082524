package bolt_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

// A credit and the journal's record of it commit in one bbolt transaction:
// both, or neither.
func ExampleStore_CompleteWith() {
	dir, _ := os.MkdirTemp("", "journal")
	defer os.RemoveAll(dir)
	s, err := bolt.Open(filepath.Join(dir, "agent.journal"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ctx := context.Background()

	key := uuid.New()
	res, err := s.Begin(ctx, journal.BeginRequest{Key: key, Owner: "worker-7", AttemptID: "a1", Durable: true})
	if err != nil || res.Outcome != journal.Started {
		fmt.Println(res.Outcome, err)
		return
	}
	rec, err := s.CompleteWith(ctx, key, res.Token, func(ctx context.Context) ([]byte, error) {
		tx, _ := bolt.TxFrom(ctx)
		credits, err := tx.CreateBucketIfNotExists([]byte("credits")) // a bucket of its own
		if err != nil {
			return nil, err
		}
		return []byte(`{"credited":4900}`), credits.Put(key[:], []byte("4900"))
	})
	fmt.Println(rec.State, string(rec.Output), err)

	err = s.View(ctx, func(tx *bbolt.Tx) error {
		fmt.Printf("credit on file: %s\n", tx.Bucket([]byte("credits")).Get(key[:]))
		return nil
	})
	fmt.Println(err)
	// Output:
	// succeeded {"credited":4900} <nil>
	// credit on file: 4900
	// <nil>
}
