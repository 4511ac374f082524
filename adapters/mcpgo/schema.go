package mcpgo

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentonce/agentonce/harness"
)

// withSchema returns t with the schema the model sees: t.Schema, else one
// derived from t.InputType. Only the copy offered to the model gets it: the
// harness keys a call by the tool it registered, so a derived schema never
// changes a key.
func withSchema(t harness.Tool) (harness.Tool, error) {
	if len(t.Schema) > 0 || t.InputType == nil {
		return t, nil
	}
	s, err := jsonschema.ForType(t.InputType, nil)
	if err != nil {
		return t, fmt.Errorf("agentonce mcpgo: tool %s: deriving the input schema from %s: %w", t.Name, t.InputType, err)
	}
	if t.Schema, err = json.Marshal(s); err != nil {
		return t, fmt.Errorf("agentonce mcpgo: tool %s: input schema: %w", t.Name, err)
	}
	return t, nil
}

// warnBare warns of a tool a model would be offered blind: without an
// input schema it cannot know the arguments, without a description when
// to call it.
func warnBare(log *slog.Logger, t harness.Tool) {
	if len(t.Schema) == 0 && t.InputType == nil {
		log.Warn("agentonce mcpgo: tool offered with no input schema; set Tool.Schema or make it with harness.Typed", "tool", t.Name)
	}
	if t.Description == "" {
		log.Warn("agentonce mcpgo: tool offered with no description; set Tool.Description", "tool", t.Name)
	}
}

func logger(opts *Options) *slog.Logger {
	if opts == nil || opts.Logger == nil {
		return slog.Default()
	}
	return opts.Logger
}
