// Command agent is an agent loop on the OpenAI Chat Completions API and
// on the Responses API, offline: the real SDK client talks to a fake API
// on loopback whose scripted model asks for the same charge twice in one
// answer, asks again after the agent restarts mid-turn, and repeats it
// while re-planning. The card is charged once per user turn and the
// receipt mailed once; it ends by counting the side effects the shop's
// API saw.
//
//	go run ./adapters/openai/examples/agent
//
// Exit status: 0 done; 1 error; 4 done, but a side effect was duplicated
// (a bug).
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	dir, err := os.MkdirTemp("", "openai-agent")
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
	sum, err := run(context.Background(), dir, os.Stdout)
	os.RemoveAll(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
	if sum.duplicates != 0 {
		os.Exit(4)
	}
}
