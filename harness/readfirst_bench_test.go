package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

// remoteStore is a store with its optional capabilities hidden: the
// harness treats it as remote and sends every call to Begin.
type remoteStore struct{ journal.Store }

// BenchmarkReadFirst sets the harness's two ways to a settled answer on
// bbolt: local (the store's LocalReads seen: a call the memo holds is
// answered by one Get before any flight, a call it does not goes to Begin)
// beside remote (the capabilities hidden: every call goes to Begin, as on
// PostgreSQL and Redis), for a replayed Keyed call and a new one. Remote's
// replay is the cost of a re-issue the memo forgot, and of the Get-less
// path the harness takes on a remote store.
func BenchmarkReadFirst(b *testing.B) {
	open := func(b *testing.B, hide bool) *harness.Harness {
		st, err := bolt.Open(filepath.Join(b.TempDir(), "bench.journal"), nil)
		if err != nil {
			b.Fatal(err)
		}
		var s journal.Store = st
		if hide {
			s = remoteStore{st}
		}
		h := harness.New(s, &harness.Options{Retry: fastRetry})
		b.Cleanup(func() { h.Close(); st.Close() })
		noop := func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"ok":true}`), nil
		}
		if err := h.Register(harness.Tool{Name: "keyed", Effect: journal.Keyed, Func: noop}); err != nil {
			b.Fatal(err)
		}
		return h
	}
	for _, mode := range []string{"local", "remote"} {
		b.Run("replay/"+mode, func(b *testing.B) {
			h := open(b, mode == "remote")
			c := harness.ToolCall{Tenant: "acme", Session: "s1", Turn: "1", Tool: "keyed", Input: json.RawMessage(paymentInput)}
			if res := h.Call(context.Background(), c); !res.OK() || res.Source != harness.Executed {
				b.Fatal(res.Status, res.Err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if res := h.Call(context.Background(), c); !res.OK() || res.Source != harness.Replayed {
					b.Fatal(res.Status, res.Err)
				}
			}
		})
		b.Run("new/"+mode, func(b *testing.B) {
			h := open(b, mode == "remote")
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				c := harness.ToolCall{Tenant: "acme", Session: "s1", Turn: "1", Tool: "keyed",
					Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
				if res := h.Call(context.Background(), c); !res.OK() || res.Source != harness.Executed {
					b.Fatal(res.Status, res.Err)
				}
			}
		})
	}
}
