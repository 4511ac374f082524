package retryclass_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentonce/agentonce/retryclass"
)

// A 417 answers a keyed request whose key was re-used with another body
// (express-idempotency does so); to an unkeyed request it is a plain 4xx.
func TestExpectationFailedOnKeyedRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusExpectationFailed)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		header string
		want   retryclass.Class
	}{
		{"Idempotency-Key", retryclass.Mismatch},
		{"X-Idempotency-Key", retryclass.Mismatch},
		{"", retryclass.Terminal},
	} {
		req, _ := http.NewRequest("POST", srv.URL, nil)
		if tc.header != "" {
			req.Header.Set(tc.header, "k1")
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := retryclass.ClassifyResponse(resp).Class; got != tc.want {
			t.Errorf("ClassifyResponse(417, header %q) = %v; want %v", tc.header, got, tc.want)
		}
		if got := retryclass.Classify(retryclass.ResponseError(resp)); got.Class != tc.want {
			t.Errorf("Classify(ResponseError(417, header %q)) = %v; want %v", tc.header, got.Class, tc.want)
		}
	}
}
