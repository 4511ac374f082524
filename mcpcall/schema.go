package mcpcall

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/agentonce/agentonce/harness"
)

// repeatProperty is RepeatArgument's schema, as the model reads it.
const repeatProperty = `{"type":"string","description":"Leave this out. Set it, to a value not used before, only to do again on purpose an action already done with the same input."}`

// InputSchema is the input schema a server offers for t: t.Schema ({"type":
// "object"} when empty) with RepeatArgument added to its properties. It is
// an error if the schema is not a JSON object of type "object", which MCP
// requires of an input schema, or already has a RepeatArgument property.
func InputSchema(t harness.Tool) (json.RawMessage, error) {
	schema := t.Schema
	if len(bytes.TrimSpace(schema)) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(schema, &m); err != nil {
		return nil, fmt.Errorf("agentonce mcp: tool %s: input schema is not a JSON object: %w", t.Name, err)
	}
	var typ any
	json.Unmarshal(m["type"], &typ)
	if typ != "object" {
		return nil, fmt.Errorf("agentonce mcp: tool %s: input schema has type %v; MCP needs \"object\"", t.Name, typ)
	}
	props := map[string]json.RawMessage{}
	if raw, ok := m["properties"]; ok {
		if err := json.Unmarshal(raw, &props); err != nil {
			return nil, fmt.Errorf("agentonce mcp: tool %s: input schema's properties are not an object: %w", t.Name, err)
		}
	}
	if _, ok := props[RepeatArgument]; ok {
		return nil, fmt.Errorf("agentonce mcp: tool %s: input schema has a property %q, the name agentonce offers the model for a deliberate repeat", t.Name, RepeatArgument)
	}
	props[RepeatArgument] = json.RawMessage(repeatProperty)
	var err error
	if m["properties"], err = json.Marshal(props); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}
