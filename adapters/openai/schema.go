package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentonce/agentonce/harness"
)

// emptySchema is the parameters of a tool that has no input schema the
// model can be given: a function that takes an object with any properties.
const emptySchema = `{"type":"object"}`

// errNoSchema is why a tool with neither Schema nor InputType reaches the
// model with emptySchema.
var errNoSchema = errors.New("neither Tool.Schema nor Tool.InputType is set (harness.Typed sets InputType)")

// parameters returns the input schema the model is given for t as the
// SDKs take it, deriving it and warning about t on the first listing only.
func (a *Adapter) parameters(t harness.Tool) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(a.offered(t), &m); err != nil {
		// Register accepted the schema, so it is valid JSON; an array or a
		// scalar is no object schema, and the API would refuse it anyway.
		return map[string]any{"type": "object"}
	}
	return m
}

// offered returns the input schema the model is given for t, deriving it
// and warning about t on the first listing only.
func (a *Adapter) offered(t harness.Tool) json.RawMessage {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.schemas[t.Name]; ok {
		return s
	}
	s, err := inputSchema(t)
	if err != nil {
		s = json.RawMessage(emptySchema)
		a.logger().Warn("agentonce: the model is given no input schema for a tool, so it does not know the arguments; set Tool.Schema",
			slog.String("tool", t.Name), slog.String("error", err.Error()))
	}
	if t.Description == "" {
		a.logger().Warn("agentonce: the model is given no description of a tool; set Tool.Description",
			slog.String("tool", t.Name))
	}
	if a.schemas == nil {
		a.schemas = make(map[string]json.RawMessage)
	}
	a.schemas[t.Name] = s
	return s
}

// inputSchema is t.Schema as given or, without one, the JSON Schema of
// t.InputType: json tags name the properties, jsonschema tags describe
// them, and fields without omitempty or omitzero are required.
func inputSchema(t harness.Tool) (json.RawMessage, error) {
	if len(t.Schema) > 0 {
		return t.Schema, nil
	}
	if t.InputType == nil {
		return nil, errNoSchema
	}
	typ := t.InputType
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem() // function arguments are an object, never null
	}
	s, err := jsonschema.ForType(typ, nil)
	if err != nil {
		return nil, fmt.Errorf("input type %s: %w", t.InputType, err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("input type %s has no object schema (a struct or a map with string keys has)", t.InputType)
	}
	return json.Marshal(s)
}

// logger is where the Adapter warns: Options.Logger, else slog's default.
func (a *Adapter) logger() *slog.Logger {
	if a.log != nil {
		return a.log
	}
	return slog.Default()
}
