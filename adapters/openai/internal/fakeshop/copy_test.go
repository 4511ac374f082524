package fakeshop

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestSameAsAnthropicCopy keeps this copy equal to the anthropic adapter's
// (see the package doc), when both modules are checked out side by side.
func TestSameAsAnthropicCopy(t *testing.T) {
	for _, name := range []string{"doc.go", "shop.go", "tools.go"} {
		theirs, err := os.ReadFile(filepath.Join("..", "..", "..", "anthropic", "internal", "fakeshop", name))
		if os.IsNotExist(err) {
			t.Skipf("the anthropic adapter is not beside this one: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		ours, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ours, theirs) {
			t.Errorf("%s differs from adapters/anthropic/internal/fakeshop/%s; the two copies must stay the same", name, name)
		}
	}
}
