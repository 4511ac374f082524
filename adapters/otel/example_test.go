package otel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentonce/agentonce"
	agentotel "github.com/agentonce/agentonce/adapters/otel"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

// The Observer records a call and its replay as two spans; the first has
// the attempt as a child span.
func ExampleNew() {
	spans := tracetest.NewSpanRecorder()
	obs, err := agentotel.New(&agentotel.Options{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
	})
	if err != nil {
		log.Fatal(err)
	}
	dir, _ := os.MkdirTemp("", "agentotel")
	defer os.RemoveAll(dir)
	h, err := agentonce.Open(context.Background(), filepath.Join(dir, "journal.db"), &agentonce.OpenOptions{Options: harness.Options{Observer: obs}})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	h.Register(harness.Tool{Name: "send_email", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"sent":true}`), nil
		}})
	c := harness.ToolCall{Tenant: "acme", Session: "s1", Turn: "1", Tool: "send_email", Input: json.RawMessage(`{"to":"ada@example.com"}`)}
	h.Call(context.Background(), c)
	h.Call(context.Background(), c)
	for _, s := range spans.Ended() {
		line := s.Name()
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case agentotel.AttrStatus, agentotel.AttrSource, agentotel.AttrAttempts:
				line += " " + string(kv.Key) + "=" + kv.Value.Emit()
			}
		}
		fmt.Println(line)
	}
	// Output:
	// agentonce.attempt agentonce.attempts=1
	// execute_tool send_email agentonce.status=succeeded agentonce.source=executed agentonce.attempts=1
	// execute_tool send_email agentonce.status=succeeded agentonce.source=replayed agentonce.attempts=1
}
