package bolt

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
)

// defaultMaxBatch is the group-commit size when Options.MaxBatchSize is
// zero.
const defaultMaxBatch = 256

// writeOp is one write waiting for a group commit. fn must be safe to run
// twice: a failed group's ops are run again one by one.
type writeOp struct {
	// fn is the write; nil means indexPut of rec, encoded as enc, with
	// unfiled (a record's write, without a closure to allocate).
	fn      func(tx *bbolt.Tx) error
	rec     *journal.Record
	enc     []byte
	unfiled bool
	// done receives the op's result, or errLead when the op's writer is to
	// commit the next group itself.
	done chan error
}

// errLead hands the commit to a waiting writer.
var errLead = errors.New("lead the next group commit")

// touchPool recycles the write transactions' collectors of touched keys.
var touchPool = sync.Pool{New: func() any { return new(txTouches) }}

// ops recycles writeOps and their channels, once their writer has its
// answer.
var ops = sync.Pool{New: func() any { return &writeOp{done: make(chan error, 1)} }}

func (s *Store) apply(op *writeOp, tx *bbolt.Tx) error {
	if op.fn != nil {
		return op.fn(tx)
	}
	return s.indexPut(tx, op.rec, op.enc, op.unfiled)
}

// commit runs fn in a write transaction shared with the writes queued
// beside it, and returns once that transaction is durable: a writer that
// finds no commit running commits the queue itself, and the first writer
// queued meanwhile commits the next group.
func (s *Store) commit(fn func(tx *bbolt.Tx) error) error {
	op := ops.Get().(*writeOp)
	op.fn = fn
	return s.enqueue(op)
}

// commitPut is commit of indexPut(tx, r, enc, unfiled).
func (s *Store) commitPut(r *journal.Record, enc []byte, unfiled bool) error {
	op := ops.Get().(*writeOp)
	op.rec, op.enc, op.unfiled = r, enc, unfiled
	return s.enqueue(op)
}

// enqueue is commit of op, which it returns to the pool.
func (s *Store) enqueue(op *writeOp) error {
	err := s.lead(op)
	*op = writeOp{done: op.done}
	ops.Put(op)
	return err
}

// lead queues op and commits groups until op is committed.
func (s *Store) lead(op *writeOp) error {
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
	if s.opts.MaxBatchDelay > 0 {
		s.cmu.Lock()
		short := len(s.queue) < s.opts.MaxBatchSize
		s.cmu.Unlock()
		if short {
			time.Sleep(s.opts.MaxBatchDelay)
		}
	}
	s.cmu.Lock()
	n := min(len(s.queue), s.opts.MaxBatchSize)
	// Only the leader uses s.batch, and it is done with it before it hands
	// the lead on.
	batch := append(s.batch[:0], s.queue[:n]...)
	s.batch = batch
	s.queue = append(s.queue[:0], s.queue[n:]...)
	s.cmu.Unlock()

	s.groups.Add(1)
	s.grouped.Add(int64(len(batch)))
	s.run(batch) // answers op too: it is batch[0]
	clear(batch) // keeps no op from the pool's next user

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
			if err := s.apply(op, tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && len(batch) > 1 {
		for _, op := range batch {
			// A group whose commit failed late (bbolt's last fdatasync)
			// may have reached the file: unfiled no longer holds.
			op.unfiled = false
			op.done <- s.writeTx(func(tx *bbolt.Tx) error { return s.apply(op, tx) })
		}
		return
	}
	for _, op := range batch {
		op.done <- err
	}
}

// writeTx runs fn in a write transaction; a panic on a damaged page is
// ErrCorrupt, and bbolt rolls the transaction back.
func (s *Store) writeTx(fn func(tx *bbolt.Tx) error) (err error) {
	t := touchPool.Get().(*txTouches)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("journal %s: %w: %v", s.path, journal.ErrCorrupt, p)
		}
		// The cache learns of the transaction's writes once it is over.
		s.settle(t, err == nil)
		clear(t.items)
		t.items = t.items[:0]
		t.arena = t.arena[:0] // bbolt is done with the values
		touchPool.Put(t)
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	line := s.lineDue.Load() // the clock's new line rides on the first write
	err = s.db.Update(func(tx *bbolt.Tx) error {
		s.txSeq++ // bbolt runs one write transaction at a time
		t.seq = s.txSeq
		s.touches = t
		defer func() { s.touches = nil }()
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
