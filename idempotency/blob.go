package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// BlobStore keeps response bodies too large for a journal record; the
// record keeps the SHA-256 and Put's reference. Implementations must be
// safe for concurrent use, and Put durable when it returns.
type BlobStore interface {
	// Put stores body, whose SHA-256 is sum, and returns a reference to it.
	Put(ctx context.Context, sum [sha256.Size]byte, body []byte) (ref string, err error)
	// Get returns the body stored under ref, reading at most max bytes.
	Get(ctx context.Context, ref string, max int64) ([]byte, error)
}

// DirBlobs is a BlobStore in a directory of files named by their SHA-256,
// which GC does not remove.
type DirBlobs struct {
	// Dir is the directory; it is created on first Put.
	Dir string
}

// Put writes body durably to Dir/<sha256> and returns the file's name.
func (d DirBlobs) Put(_ context.Context, sum [sha256.Size]byte, body []byte) (string, error) {
	name := hex.EncodeToString(sum[:])
	if err := os.MkdirAll(d.Dir, 0o700); err != nil {
		return "", fmt.Errorf("blob store %s: %w", d.Dir, err)
	}
	f, err := os.CreateTemp(d.Dir, name+".tmp*")
	if err != nil {
		return "", fmt.Errorf("blob store %s: %w", d.Dir, err)
	}
	_, err = f.Write(body)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(d.Dir, name))
	}
	if err == nil {
		err = syncDir(d.Dir)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("blob store %s: storing %s: %w", d.Dir, name, err)
	}
	return name, nil
}

// Get reads the blob ref, at most max bytes.
func (d DirBlobs) Get(_ context.Context, ref string, max int64) ([]byte, error) {
	if len(ref) != 2*sha256.Size || filepath.Base(ref) != ref {
		return nil, fmt.Errorf("blob store %s: %q is not a blob reference", d.Dir, ref)
	}
	f, err := os.Open(filepath.Join(d.Dir, ref))
	if err != nil {
		return nil, fmt.Errorf("blob store %s: %w", d.Dir, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("blob is larger than %d bytes", max)
	}
	if err != nil {
		return nil, fmt.Errorf("blob store %s: reading %s: %w", d.Dir, ref, err)
	}
	return b, nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
