package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// The adapter's README shows this program whole: the block after its
// marker must be main.go, byte for byte.
func TestREADMEShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- program: examples/readme -->\n```go\n"
	_, block, ok := strings.Cut(string(readme), marker)
	if ok {
		block, _, ok = strings.Cut(block, "\n```\n")
	}
	if !ok {
		t.Fatalf("README.md has no block %q ending in ```", marker)
	}
	if block+"\n" != string(src) {
		t.Errorf("README.md's program is not examples/readme/main.go: copy main.go into the block after %q", marker)
	}
}

// The lost answer is settled from Stripe, without a second charge; run
// again on its journal, the program charges nothing and replays.
func TestRunTwice(t *testing.T) {
	t.Chdir(t.TempDir())
	for run, want := range []string{
		"succeeded reconciled {\"payment_intent\":\"pi_fake000001\",\"status\":\"succeeded\",\"amount\":4900,\"currency\":\"usd\"}\nPaymentIntents made by this run: 1\n",
		"succeeded replayed {\"payment_intent\":\"pi_fake000001\",\"status\":\"succeeded\",\"amount\":4900,\"currency\":\"usd\"}\nPaymentIntents made by this run: 0\n",
	} {
		if out := stdoutOf(t, main); out != want {
			t.Errorf("run %d printed:\n%s\nwant:\n%s", run+1, out, want)
		}
	}
}

// stdoutOf returns what f prints.
func stdoutOf(t *testing.T, f func()) string {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = old }()
	read := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		read <- string(b)
	}()
	f()
	w.Close()
	return <-read
}
