package openai_test

import (
	"os"
	"strings"
	"testing"
)

// The README's program is examples/readme/main.go, to the byte, so that
// it is compiled and tested and cannot drift.
func TestREADMEProgram(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- program: examples/readme -->\n```go\n"
	_, block, ok := strings.Cut(string(readme), marker)
	if !ok {
		t.Fatalf("README.md has no %q", marker)
	}
	block, _, ok = strings.Cut(block, "\n```\n")
	if !ok {
		t.Fatal("README.md: the program's code block does not end")
	}
	file, err := os.ReadFile("examples/readme/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if block+"\n" != string(file) {
		t.Errorf("README.md's program differs from examples/readme/main.go; copy the file into the block")
	}
}
