// Creating a journal so that a crash or a power cut leaves either no
// journal or a whole one.

package bolt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.etcd.io/bbolt"
)

// createBolt makes a new journal at path, unless a file is there already:
// built and synced in a temporary file beside path, then hard-linked to
// path, so a power cut cannot leave a file Open refuses (a cut leaves
// path.creating-*, which the next removes). Without hard links it reports
// errNoLink, and Open lets bbolt create the file.
func createBolt(path string, ns uuid.UUID) error {
	if _, err := os.Lstat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil // there, or Open says what is wrong
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	removeStaleCreations(dir, base)
	f, err := os.CreateTemp(dir, base+".creating-*")
	if err != nil {
		return fmt.Errorf("create journal %s: %w", path, err)
	}
	tmp := f.Name()
	f.Close()
	defer os.Remove(tmp) // CreateTemp made it 0600
	db, err := bbolt.Open(tmp, 0o600, &bbolt.Options{FreelistType: bbolt.FreelistMapType})
	if err != nil {
		return fmt.Errorf("create journal %s: %w", path, err)
	}
	s := &Store{path: path}
	err = db.Update(func(tx *bbolt.Tx) error { return s.create(tx, ns) })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("create journal %s: %w", path, err)
	}
	switch err := os.Link(tmp, path); {
	case errors.Is(err, fs.ErrExist):
		return nil // another process created it first
	case err != nil:
		return errNoLink
	}
	return syncDir(dir)
}

// staleCreation is how old a creation's temporary file must be before
// another creation removes it: building a journal takes milliseconds.
const staleCreation = 10 * time.Minute

// removeStaleCreations removes the temporary files that creations of the
// journal base in dir left behind more than staleCreation ago.
func removeStaleCreations(dir, base string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), base+".creating-") {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleCreation {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// errNoLink: the file system cannot hard-link the new journal into place.
var errNoLink = errors.New("no hard links")

// syncDir makes the names in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) && runtime.GOOS != "windows" {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
