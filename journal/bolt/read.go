package bolt

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
)

// Get returns the newest record for key.
func (s *Store) Get(ctx context.Context, key uuid.UUID) (journal.Record, error) {
	if err := s.enter(ctx); err != nil {
		return journal.Record{}, err
	}
	defer s.exit()
	st := s.stripe(key)
	st.mu.Lock()
	o, ok := st.overlay[key]
	var c journal.Record
	if ok {
		c = *o.rec
	}
	st.mu.Unlock()
	if ok {
		return c, nil
	}
	var rec journal.Record
	found, err := s.readFile(key, &rec)
	if err != nil {
		return journal.Record{}, err
	}
	if !found {
		// Not fmt.Errorf: a new call's first read is a miss.
		return journal.Record{}, notFound(key)
	}
	return rec, nil
}

// notFound is ErrNotFound for key.
type notFound uuid.UUID

func (e notFound) Error() string { return journal.ErrNotFound.Error() + ": " + uuid.UUID(e).String() }
func (e notFound) Unwrap() error { return journal.ErrNotFound }

// readFile is readIn in a read transaction of its own, or from the cache.
func (s *Store) readFile(key uuid.UUID, dst *journal.Record) (found bool, err error) {
	c := &s.stripes[key[0]].cache
	hit, gen, fill := c.cached(key, dst)
	if hit {
		return true, nil
	}
	err = s.view(func(tx *bbolt.Tx) error {
		found, err = s.readIn(tx.Bucket(bucketRecords), key, dst)
		return err
	})
	if testHookRead != nil {
		testHookRead(key)
	}
	if err == nil && found && fill {
		c.fill(dst, gen)
	}
	return found, err
}

// view runs fn in a read transaction; a panic on a damaged page is ErrCorrupt.
func (s *Store) view(fn func(tx *bbolt.Tx) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("journal %s: %w: %v", s.path, journal.ErrCorrupt, p)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return s.db.View(fn)
}

// readTx returns the committed record for key within tx, or nil.
func (s *Store) readTx(tx *bbolt.Tx, key uuid.UUID) (*journal.Record, error) {
	var d journal.Record
	if ok, err := s.readIn(tx.Bucket(bucketRecords), key, &d); !ok || err != nil {
		return nil, err
	}
	return &d, nil
}

// readIn reads the committed record for key into dst from recs, the
// records bucket of a transaction, and reports whether there is one.
func (s *Store) readIn(recs *bbolt.Bucket, key uuid.UUID, dst *journal.Record) (bool, error) {
	v := recs.Get(key[:])
	if v == nil {
		return false, nil
	}
	d, err := decodeStored(key[:], v)
	if err != nil {
		return false, wrapKey(s.path, key[:], err)
	}
	s.endStale(&d)
	*dst = d
	return true, nil
}

// current returns the newest record for key: the overlay's (itself, for
// reading only), else the file's. The key's stripe is locked.
func (s *Store) current(st *stripe, key uuid.UUID) (r *journal.Record, err error) {
	if o, ok := st.overlay[key]; ok {
		return o.rec, nil
	}
	err = s.view(func(tx *bbolt.Tx) error {
		r, err = s.readTx(tx, key)
		return err
	})
	return r, err
}

// wrapKey names the file and the record key in err, if not nil.
func wrapKey(path string, key []byte, err error) error {
	if err == nil {
		return nil
	}
	if len(key) == 16 {
		return fmt.Errorf("journal %s: key %s: %w", path, uuid.UUID(key), err)
	}
	return fmt.Errorf("journal %s: key %x: %w", path, clip(key), err)
}

// clip is at most 64 bytes of b, for an error message: on a damaged page a
// key or value can run for gigabytes.
func clip(b []byte) []byte { return b[:min(len(b), 64)] }
