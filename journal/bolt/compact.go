package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"go.etcd.io/bbolt"

	"github.com/agentonce/agentonce/journal"
)

// compactTxRecords is how many records Compact copies per transaction.
const compactTxRecords = 10000

// Compact copies the journal at srcPath, with its namespace and records,
// into a new file at dstPath, which must not exist, leaving out the free
// pages bbolt never gives back. progress, if not nil, is called after each
// transaction with the records copied so far and the total. The source is
// opened read-only (ErrInUse while a writer holds it) and checked as Open
// checks it; on any error the partial copy is removed. To compact in
// place, rename the copy over the journal while nothing has it open.
func Compact(ctx context.Context, srcPath, dstPath string, progress func(done, total int64)) (err error) {
	src, err := Open(srcPath, &Options{Journal: journal.Options{ReadOnly: true}})
	if err != nil {
		return err
	}
	defer src.Close()
	if n := len(src.overlaySnapshot()); n > 0 {
		return fmt.Errorf("compact journal %s: %d records of a process that stopped are only in %s; open the journal for writing once to fold them in", srcPath, n, src.pendlog.path)
	}

	if _, err := os.Stat(dstPath); err == nil {
		return fmt.Errorf("compact journal %s: %w", dstPath, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("compact journal: %w", err)
	}
	dst, err := bbolt.Open(dstPath, 0o600, &bbolt.Options{Timeout: src.opts.LockTimeout, NoSync: true, FreelistType: bbolt.FreelistMapType})
	if err != nil {
		return openError(dstPath, err)
	}
	defer func() {
		if cerr := dst.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("compact journal %s: %w", dstPath, cerr)
		}
		if err != nil {
			os.Remove(dstPath)
		}
	}()

	var total, done int64
	err = src.view(func(stx *bbolt.Tx) error {
		total = int64(stx.Bucket(bucketRecords).Stats().KeyN)
		// The meta bucket first: a copy without it is not a journal.
		err := dst.Update(func(dtx *bbolt.Tx) error {
			meta, err := dtx.CreateBucket(bucketMeta)
			if err != nil {
				return err
			}
			// Not the layout-1 session index: the copy's first writer's
			// migration drops it, as the source's would have.
			err = stx.Bucket(bucketMeta).ForEach(func(k, v []byte) error {
				if bytes.Equal(k, metaSessionsClean) {
					return nil
				}
				return meta.Put(k, v)
			})
			if err != nil {
				return err
			}
			for _, b := range [][]byte{bucketIndex, bucketCounts, bucketFresh} {
				if stx.Bucket(b) != nil {
					if _, err := dtx.CreateBucket(b); err != nil {
						return err
					}
				}
			}
			_, err = dtx.CreateBucket(bucketRecords)
			return err
		})
		if err != nil {
			return err
		}
		if err := copyBucket(ctx, dst, stx, bucketRecords, func() { done++ }, func() {
			if progress != nil {
				progress(done, total)
			}
		}); err != nil {
			return err
		}
		for _, b := range [][]byte{bucketIndex, bucketCounts, bucketFresh} {
			if stx.Bucket(b) != nil {
				if err := copyBucket(ctx, dst, stx, b, func() {}, func() {}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("compact journal %s to %s: %w", srcPath, dstPath, err)
	}
	if err := dst.Sync(); err != nil {
		return fmt.Errorf("compact journal %s: %w", dstPath, err)
	}
	return nil
}

// copyBucket copies the bucket name of stx into dst, in transactions of
// compactTxRecords entries; each runs after every entry and batch after
// every transaction.
func copyBucket(ctx context.Context, dst *bbolt.DB, stx *bbolt.Tx, name []byte, each, batch func()) error {
	c := stx.Bucket(name).Cursor()
	for k, v := c.First(); k != nil; {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := dst.Update(func(dtx *bbolt.Tx) error {
			b := dtx.Bucket(name)
			b.FillPercent = 1.0 // keys come in order: fill pages up
			for n := 0; k != nil && n < compactTxRecords; n++ {
				if err := b.Put(k, v); err != nil {
					return err
				}
				each()
				k, v = c.Next()
			}
			return nil
		})
		if err != nil {
			return err
		}
		batch()
	}
	return nil
}
