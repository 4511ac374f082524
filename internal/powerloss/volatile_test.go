package powerloss

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestVolatileModel drives the volatile layer with random writes and
// truncations over a backing file and compares every read, and the backing
// file after flush, with a plain byte slice that does the same.
func TestVolatileModel(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 1))
		path := filepath.Join(t.TempDir(), "f")
		initial := make([]byte, rng.IntN(3*pageSize))
		for i := range initial {
			initial[i] = byte(rng.Uint32())
		}
		if err := os.WriteFile(path, initial, 0o600); err != nil {
			t.Fatal(err)
		}
		disk, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		model := bytes.Clone(initial)
		v := newVolatile(int64(len(initial)))
		for op := range 60 {
			switch rng.IntN(4) {
			case 0, 1:
				off := rng.IntN(4 * pageSize)
				p := make([]byte, rng.IntN(2*pageSize)+1)
				for i := range p {
					p[i] = byte(rng.Uint32())
				}
				if err := v.writeAt(disk, p, int64(off)); err != nil {
					t.Fatalf("seed %d op %d: writeAt(%d, %d bytes) = %v", seed, op, off, len(p), err)
				}
				if end := off + len(p); end > len(model) {
					model = append(model, make([]byte, end-len(model))...)
				}
				copy(model[off:], p)
			case 2:
				size := rng.IntN(4 * pageSize)
				v.truncate(int64(size))
				if size < len(model) {
					model = model[:size]
				} else {
					model = append(model, make([]byte, size-len(model))...)
				}
			case 3:
				off := rng.IntN(5 * pageSize)
				p := make([]byte, rng.IntN(2*pageSize)+1)
				n, err := v.readAt(disk, p, int64(off))
				want := []byte{}
				if off < len(model) {
					want = model[off:min(len(model), off+len(p))]
				}
				if err != nil || !bytes.Equal(p[:n], want) {
					t.Fatalf("seed %d op %d: readAt(%d, %d bytes) = %d bytes, %v; want %d bytes of the model", seed, op, off, len(p), n, err, len(want))
				}
			}
			if v.size != int64(len(model)) {
				t.Fatalf("seed %d op %d: size = %d; want %d", seed, op, v.size, len(model))
			}
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, initial) {
			t.Fatalf("seed %d: the backing file changed before flush", seed)
		}
		if err := v.flush(disk); err != nil {
			t.Fatalf("seed %d: flush = %v", seed, err)
		}
		disk.Close()
		if got, _ := os.ReadFile(path); !bytes.Equal(got, model) {
			t.Fatalf("seed %d: after flush the backing file has %d bytes, not the %d of the model", seed, len(got), len(model))
		}
	}
}
