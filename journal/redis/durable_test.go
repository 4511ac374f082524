package redis

import (
	"errors"
	"testing"
)

// Only appendonly yes with appendfsync always passes; the shared test
// server's configuration is not changed to show it.
func TestDurable(t *testing.T) {
	for _, c := range []struct {
		only, fsync string
		ok          bool
	}{
		{"yes", "always", true},
		{"yes", "everysec", false},
		{"yes", "no", false},
		{"no", "always", false},
		{"", "", false},
	} {
		err := durable("test:6379", map[string]string{"appendonly": c.only, "appendfsync": c.fsync})
		if (err == nil) != c.ok || err != nil && !errors.Is(err, ErrNotDurable) {
			t.Errorf("durable(appendonly %q, appendfsync %q) = %v; want ok=%t", c.only, c.fsync, err, c.ok)
		}
	}
}
