package bolt

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
)

// defaultMaxBatch is the group-commit size when Options.MaxBatchSize is
// zero: more writers than a machine usually runs at once.
const defaultMaxBatch = 256

// writeOp is one write waiting for a group commit. fn must be safe to run
// more than once: when a group's transaction fails, each op of the group is
// run again alone, so that one bad write does not fail its neighbours.
type writeOp struct {
	fn func(tx *bbolt.Tx) error
	// after, if not nil, runs once fn's transaction committed, before the
	// next group commits: the in-memory index follows the file in commit
	// order.
	after func()
	// done receives the op's result, or errLead when the op's writer is to
	// commit the next group itself.
	done chan error
}

// errLead hands the commit to a waiting writer.
var errLead = errors.New("lead the next group commit")

// commit runs fn in a write transaction shared with the writes queued
// beside it, then after, and returns once that transaction is durable.
//
// Group commit without a goroutine of its own: a writer that finds no
// commit running commits the queue itself (so a lone writer pays no
// hand-off and waits for no timer); writers that arrive meanwhile queue up,
// and when the group is done the first of them is told to commit the next
// group, which then holds every write that arrived during the previous
// fsync. The group size so follows the concurrency, up to
// Options.MaxBatchSize; Options.MaxBatchDelay makes each committer wait that
// long for more writers first.
func (s *Store) commit(fn func(tx *bbolt.Tx) error, after func()) error {
	op := &writeOp{fn: fn, after: after, done: make(chan error, 1)}
	s.cmu.Lock()
	s.queue = append(s.queue, op)
	lead := !s.leading
	s.leading = true
	s.cmu.Unlock()
	if !lead {
		if err := <-op.done; err != errLead {
			return err
		}
	}
	if s.delay > 0 {
		s.cmu.Lock()
		short := len(s.queue) < s.maxBatch
		s.cmu.Unlock()
		if short {
			time.Sleep(s.delay)
		}
	}
	s.cmu.Lock()
	n := min(len(s.queue), s.maxBatch)
	batch := make([]*writeOp, n)
	copy(batch, s.queue)
	s.queue = append(s.queue[:0], s.queue[n:]...)
	s.cmu.Unlock()

	s.run(batch) // answers op too: it is batch[0]

	s.cmu.Lock()
	if len(s.queue) > 0 {
		s.queue[0].done <- errLead
	} else {
		s.leading = false
	}
	s.cmu.Unlock()
	return <-op.done
}

// run commits batch in one transaction and answers each op.
func (s *Store) run(batch []*writeOp) {
	err := s.writeTx(func(tx *bbolt.Tx) error {
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
func (s *Store) writeTx(fn func(tx *bbolt.Tx) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("journal %s: %w: %v", s.path, journal.ErrCorrupt, p)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	line := s.lineDue.Load() // the clock's new line rides on the first write
	err = s.db.Update(func(tx *bbolt.Tx) error {
		if line != nil {
			if err := tx.Bucket(bucketMeta).Put(metaClock, *line); err != nil {
				return err
			}
		}
		return fn(tx)
	})
	if err == nil {
		s.wrote.Store(true)
		if line != nil {
			s.lineDue.CompareAndSwap(line, nil)
		}
	}
	return err
}
