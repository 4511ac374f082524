package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// The example's own claim: every duplicate the model asks for, and the
// lost answer, end in one side effect each.
func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out, filepath.Join(t.TempDir(), "agent.journal")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "side effects at the APIs: 2 (charges 1, emails 1); duplicate side effects: 0") {
		t.Errorf("output:\n%s\nwant 2 side effects and no duplicate", out.String())
	}
}
