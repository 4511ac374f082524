package agentonce_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

// A Harness that Open opened removes expired records in the background, in
// batches, and keeps the unknown ones.
func TestBackgroundGC(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	h, err := agentonce.Open(context.Background(), filepath.Join(t.TempDir(), "j.db"), &agentonce.OpenOptions{
		Options: harness.Options{Retry: fastRetry, RecordTTL: time.Hour}, GCEvery: 10 * time.Millisecond,
		Journal: &journal.Options{Now: clock}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	mustRegister(t, h,
		harness.Tool{Name: "ok", Effect: journal.Keyed,
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`1`), nil }},
		harness.Tool{Name: "lost", Timeout: time.Second, Settle: -1,
			Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return nil, errors.New("read: connection reset by peer")
			}})
	for i := range 150 {
		mustCall(t, h, call("ok", fmt.Sprintf(`{"n":%d}`, i)))
	}
	if res := mustCall(t, h, call("lost", `{}`)); res.Status != harness.Unknown {
		t.Fatalf("lost: %v; want unknown", res.Status)
	}
	now.Add(int64(2 * time.Hour))
	st := h.Store()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := st.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if s.Records == 1 {
			if n := s.ByState[journal.StateUnknown]; n != 1 {
				t.Errorf("the record kept is %v; want the unknown one", s.ByState)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("records after the background GC had 10 s = %d; want 1 (the unknown one)", s.Records)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
