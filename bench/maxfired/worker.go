package main

import (
	"slices"
	"strings"

	"github.com/agentonce/agentonce/bench/maxfired/worker"
)

type (
	job     = worker.Job
	outcome = worker.Outcome
	runtime = worker.Runtime
)

var runtimes []runtime // filled by each runtime's file; ordered puts them in the table's order

// tableOrder is the table's order of the runtimes: the server side, the
// MCP servers, the agent frameworks and SDKs, then DBOS.
var tableOrder = []string{"middleware", "mcp-go", "go-sdk", "eino", "genkit", "anthropic-sdk-go", "openai-go", "dbos"}

// ordered sorts runtimes into tableOrder, any other after them.
func ordered() {
	rank := func(name string) int {
		if i := slices.Index(tableOrder, name); i >= 0 {
			return i
		}
		return len(tableOrder)
	}
	slices.SortStableFunc(runtimes, func(a, b runtime) int { return rank(a.Name) - rank(b.Name) })
}

func runtimeNames() string {
	var n []string
	for _, r := range runtimes {
		n = append(n, r.Name)
	}
	return strings.Join(n, ", ")
}
