package agentoncetest_test

import (
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/agentonce/agentonce/agentoncetest"
	"github.com/agentonce/agentonce/harness/downstream"
)

// The kit in a main program: StartServer instead of NewServer, and a
// Report instead of a *testing.T. The mail API is an Unkeyed tool's
// downstream (Passthrough), counting by the key downstream.Transport sends
// such a tool: X-Agentonce-Key. A blind re-run sends the mail twice, and
// the Report says so.
func ExampleStartServer() {
	mail := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	srv, err := agentoncetest.StartServer(mail, &agentoncetest.DownstreamOptions{
		Passthrough: true, KeyHeader: downstream.DefaultUnkeyedKeyHeader,
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	for range 2 { // the re-run the harness exists to prevent
		req, _ := http.NewRequest("POST", srv.URL+"/emails", strings.NewReader(`{"to":"a@example.com"}`))
		req.Header.Set(downstream.DefaultUnkeyedKeyHeader, "0b9e4c2e-6a4f-5d7e-9f00-1a2b3c4d5e6f")
		resp, err := srv.Client().Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
	}
	report := agentoncetest.NewReport(os.Stdout)
	agentoncetest.AssertNoDuplicates(report, srv.Downstream)
	fmt.Println("failures:", report.Failures())
	// Output:
	// downstream Duplicates() = 1; want 0 (a side effect happened twice for one key)
	// failures: 1
}
