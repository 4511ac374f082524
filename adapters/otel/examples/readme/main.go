// Command readme is OpenTelemetry Go's getting-started set-up (a tracer
// provider exporting to stdout) with an agentonce Harness reporting to it.
// A tool is called twice with the same input, as a model that repeats
// itself would: the card is charged once, and both calls are spans, the
// second answered from the journal. Run it again: no charge, one more
// replay.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/agentonce/agentonce"
	agentotel "github.com/agentonce/agentonce/adapters/otel"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
)

type ChargeInput struct {
	Order string `json:"order"`
	Cents int    `json:"cents"`
}

func main() {
	ctx := context.Background()
	exporter, err := stdouttrace.New(stdouttrace.WithWriter(os.Stdout)) // a JSON line per span
	if err != nil {
		log.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter))
	defer tp.Shutdown(ctx) // exports the spans
	otel.SetTracerProvider(tp)

	// agentonce: the Observer, on the global providers, in the Harness.
	obs, err := agentotel.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	h, err := agentonce.Open(ctx, "agent.journal", &agentonce.OpenOptions{Options: harness.Options{Observer: obs}})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	charges := 0 // the side effect; a real tool would call a payment API
	err = h.Register(harness.Typed("charge_card", journal.Unkeyed, func(ctx context.Context, in ChargeInput) (string, error) {
		charges++
		return fmt.Sprintf("charged %d cents for %s", in.Cents, in.Order), nil
	}))
	if err != nil {
		log.Fatal(err)
	}
	call := harness.ToolCall{Session: "conversation-1", Turn: "1", Tool: "charge_card",
		Input: json.RawMessage(`{"order":"A-1001","cents":4900}`)}
	for range 2 {
		res := h.Call(ctx, call)
		fmt.Println(res.Status, res.Source, res.ForModel())
	}
	fmt.Println("charges made by this run:", charges)
}
