package approval_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/agentonce/agentonce/approval"
	"github.com/agentonce/agentonce/journal/memory"
)

// The application mounts the page behind its own authentication; the
// Approver names the person its session says is signed in.
func ExampleHandler() {
	store := memory.New(nil) // the agent's journal: bbolt, PostgreSQL, Redis
	page := approval.Handler(store, &approval.Options{
		Approver: func(r *http.Request) (string, error) {
			// In an application: the signed-in user, from its session.
			if user, _, ok := r.BasicAuth(); ok && user == "ann" {
				return "ann@example.com", nil
			}
			return "", errors.New("only the payments on-call may approve")
		},
	})
	mux := http.NewServeMux()
	mux.Handle("/approvals/", http.StripPrefix("/approvals", page))

	req := httptest.NewRequest(http.MethodGet, "/approvals/", nil)
	req.SetBasicAuth("ann", "…")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	fmt.Println(rec.Code, strings.Contains(rec.Body.String(), "Nothing awaits approval."))
	// Output: 200 true
}
