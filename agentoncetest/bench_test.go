package agentoncetest_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentonce/agentonce/agentoncetest"
)

// okHandler is the cheapest handler with a body: what the Downstream adds
// is then most of what is measured.
var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"ch_1","status":"succeeded"}`)
})

const benchBody = `{"customer":"8812","order":"A-1001","amount_cents":4900,"currency":"USD"}`

func serve(h http.Handler, key string) int {
	req := httptest.NewRequest("POST", "/charges", strings.NewReader(benchBody))
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Code
}

// BenchmarkDownstream measures the Downstream in process (no network)
// beside the bare handler: a new key each time (fingerprint, store) and a
// replay of one stored key.
func BenchmarkDownstream(b *testing.B) {
	b.Run("new-key/agentonce", func(b *testing.B) {
		d, _ := agentoncetest.NewDownstream(okHandler, nil)
		keys := make([]string, b.N)
		for i := range keys {
			keys[i] = fmt.Sprint("key-", i)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			serve(d, keys[i])
		}
	})
	b.Run("new-key/baseline", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			serve(okHandler, "")
		}
	})
	b.Run("replay/agentonce", func(b *testing.B) {
		d, _ := agentoncetest.NewDownstream(okHandler, nil)
		serve(d, "k")
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			serve(d, "k")
		}
	})
	b.Run("replay/baseline", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			serve(okHandler, "")
		}
	})
}
