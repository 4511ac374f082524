package journal

import (
	"fmt"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
)

// defaultMaxBatch is the group-commit size when Options.MaxBatchSize is
// zero: more writers than a machine usually runs at once.
const defaultMaxBatch = 256

// writeOp is one write waiting for the commit loop. fn must be safe to run
// more than once: when a group's transaction fails, each op of the group is
// run again alone, so that one bad write does not fail its neighbours.
type writeOp struct {
	fn func(tx *bolt.Tx) error
	// after, if not nil, runs in the loop once fn's transaction committed:
	// the in-memory index follows the file in commit order.
	after func()
	done  chan error
}

// commit runs fn in a write transaction shared with the writes queued
// beside it, then after, and returns once that transaction is durable.
func (s *BoltStore) commit(fn func(tx *bolt.Tx) error, after func()) error {
	op := &writeOp{fn: fn, after: after, done: make(chan error, 1)}
	s.writes <- op
	return <-op.done
}

// loop is the group-commit loop. It takes the first queued write at once (an
// idle store does not wait for a timer), gathers whatever else is queued (and,
// with Options.MaxBatchDelay, whatever arrives within that delay), and
// commits them in one transaction: one fsync pair for the group. Writers
// that arrive while a transaction commits form the next group, so the
// group size follows the concurrency.
func (s *BoltStore) loop() {
	defer close(s.loopDone)
	debug.SetPanicOnFault(true)
	batch := make([]*writeOp, 0, s.maxBatch)
	for op := range s.writes {
		batch = append(batch[:0], op)
		batch = s.gather(batch)
		s.run(batch)
		clear(batch)
	}
}

func (s *BoltStore) gather(batch []*writeOp) []*writeOp {
drain:
	for len(batch) < s.maxBatch {
		select {
		case op, ok := <-s.writes:
			if !ok {
				return batch
			}
			batch = append(batch, op)
		default:
			break drain
		}
	}
	if s.delay <= 0 || len(batch) >= s.maxBatch {
		return batch
	}
	t := time.NewTimer(s.delay)
	defer t.Stop()
	for len(batch) < s.maxBatch {
		select {
		case op, ok := <-s.writes:
			if !ok {
				return batch
			}
			batch = append(batch, op)
		case <-t.C:
			return batch
		}
	}
	return batch
}

// run commits batch and answers each op.
func (s *BoltStore) run(batch []*writeOp) {
	err := s.writeTx(func(tx *bolt.Tx) error {
		for _, op := range batch {
			if err := op.fn(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && len(batch) > 1 {
		for _, op := range batch {
			err := s.writeTx(op.fn)
			if err == nil && op.after != nil {
				op.after()
			}
			op.done <- err
		}
		return
	}
	for _, op := range batch {
		if err == nil && op.after != nil {
			op.after()
		}
		op.done <- err
	}
}

// writeTx runs fn in a write transaction, turning a panic of bbolt on a
// damaged page into ErrCorrupt (bbolt rolls the transaction back).
func (s *BoltStore) writeTx(fn func(tx *bolt.Tx) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("journal %s: %w: %v", s.path, ErrCorrupt, p)
		}
	}()
	return s.db.Update(fn)
}
