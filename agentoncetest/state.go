package agentoncetest

import (
	"cmp"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// stateVersion is the state-file format this package writes and reads.
const stateVersion = 1

// stateFile is the JSON form of a Downstream's durable state: settled
// entries only.
type stateFile struct {
	Version int          `json:"version"`
	Entries []stateEntry `json:"entries"`
	Counts  []stateCount `json:"counts"`
}

type stateEntry struct {
	Client      string      `json:"client,omitempty"`
	Key         string      `json:"key"`
	Fingerprint string      `json:"fingerprint"`
	Created     time.Time   `json:"created"`
	Status      int         `json:"status"`
	Header      http.Header `json:"header,omitempty"`
	Body        []byte      `json:"body,omitempty"`
}

type stateCount struct {
	Client  string `json:"client,omitempty"`
	Key     string `json:"key"`
	Effects int    `json:"effects"`
	Calls   int    `json:"calls"`
}

// load reads d.o.StateFile if it exists. A missing file is an empty state.
func (d *Downstream) load() error {
	b, err := os.ReadFile(d.o.StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("downstream state file %s: %w", d.o.StateFile, err)
	}
	var sf stateFile
	if err := json.Unmarshal(b, &sf); err != nil {
		return fmt.Errorf("downstream state file %s: %w: %v", d.o.StateFile, ErrBadState, err)
	}
	if sf.Version != stateVersion {
		return fmt.Errorf("downstream state file %s: %w: version %d, want %d", d.o.StateFile, ErrBadState, sf.Version, stateVersion)
	}
	for i, se := range sf.Entries {
		fp, err := hex.DecodeString(se.Fingerprint)
		if err != nil || len(fp) != len(entry{}.fingerprint) {
			return fmt.Errorf("downstream state file %s: %w: entry %d (key %q) has a bad fingerprint", d.o.StateFile, ErrBadState, i, se.Key)
		}
		if se.Status < 100 || se.Status > 599 {
			return fmt.Errorf("downstream state file %s: %w: entry %d (key %q) has status %d", d.o.StateFile, ErrBadState, i, se.Key, se.Status)
		}
		if se.Key == "" {
			return fmt.Errorf("downstream state file %s: %w: entry %d has no key", d.o.StateFile, ErrBadState, i)
		}
		e := &entry{created: se.Created, done: true, status: se.Status, header: se.Header, body: se.Body}
		copy(e.fingerprint[:], fp)
		if e.header == nil {
			e.header = http.Header{}
		}
		d.entries[scopedKey{Client: se.Client, Key: se.Key}] = e
	}
	for i, c := range sf.Counts {
		if c.Effects < 0 || c.Calls < 0 {
			return fmt.Errorf("downstream state file %s: %w: count %d (key %q) is negative", d.o.StateFile, ErrBadState, i, c.Key)
		}
		k := scopedKey{Client: c.Client, Key: c.Key}
		d.effects[k] += c.Effects
		d.calls[k] += c.Calls
	}
	return nil
}

// persist writes a snapshot of the settled state atomically (temp file,
// fsync, rename, fsync of the directory).
func (d *Downstream) persist() error {
	d.persistMu.Lock()
	defer d.persistMu.Unlock()

	d.mu.Lock()
	sf := stateFile{Version: stateVersion}
	for k, e := range d.entries {
		if !e.done {
			continue
		}
		sf.Entries = append(sf.Entries, stateEntry{
			Client: k.Client, Key: k.Key, Fingerprint: hex.EncodeToString(e.fingerprint[:]),
			Created: e.created, Status: e.status, Header: e.header, Body: e.body,
		})
	}
	for k, n := range d.calls {
		sf.Counts = append(sf.Counts, stateCount{Client: k.Client, Key: k.Key, Effects: d.effects[k], Calls: n})
	}
	d.mu.Unlock()
	// Sorted so that the file is stable and diffable.
	slices.SortFunc(sf.Entries, func(a, b stateEntry) int { return cmpKey(a.Client, a.Key, b.Client, b.Key) })
	slices.SortFunc(sf.Counts, func(a, b stateCount) int { return cmpKey(a.Client, a.Key, b.Client, b.Key) })

	b, err := json.MarshalIndent(sf, "", "  ")
	if err != nil {
		return fmt.Errorf("downstream state file %s: %w", d.o.StateFile, err)
	}
	return writeFileAtomic(d.o.StateFile, b)
}

func cmpKey(c1, k1, c2, k2 string) int {
	return cmp.Or(strings.Compare(c1, c2), strings.Compare(k1, k2))
}

func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("downstream state file %s: %w", path, err)
	}
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("downstream state file %s: %w", path, err)
	}
	if dh, err := os.Open(dir); err == nil {
		// Not every platform can fsync a directory: not reported.
		_ = dh.Sync()
		dh.Close()
	}
	return nil
}
