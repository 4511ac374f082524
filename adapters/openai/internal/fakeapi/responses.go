package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
)

type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	PreviousResponseID string          `json:"previous_response_id"`
	Tools              []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"tools"`
}

type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// conversation decodes input (a string, or items) onto the stored
// conversation of the previous response.
func (s *Server) conversation(req responsesRequest) ([]Msg, error) {
	var conv []Msg
	if req.PreviousResponseID != "" {
		s.mu.Lock()
		prev, ok := s.stored[req.PreviousResponseID]
		s.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("previous response with id %q not found", req.PreviousResponseID)
		}
		conv = append(conv, prev...)
	}
	var str string
	if json.Unmarshal(req.Input, &str) == nil {
		return append(conv, Msg{Role: "user", Text: str}), nil
	}
	var items []inputItem
	if err := json.Unmarshal(req.Input, &items); err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	for _, it := range items {
		switch it.Type {
		case "", "message":
			conv = append(conv, Msg{Role: it.Role, Text: text(it.Content)})
		case "function_call":
			// Consecutive calls are one assistant message, as in Chat.
			if n := len(conv); n > 0 && conv[n-1].Role == "assistant" && len(conv[n-1].Calls) > 0 {
				conv[n-1].Calls = append(conv[n-1].Calls, Call{ID: it.CallID, Name: it.Name, Arguments: it.Arguments})
				continue
			}
			conv = append(conv, Msg{Role: "assistant", Calls: []Call{{ID: it.CallID, Name: it.Name, Arguments: it.Arguments}}})
		case "function_call_output":
			conv = append(conv, Msg{Role: "tool", CallID: it.CallID, Text: text(it.Output)})
		default:
			return nil, fmt.Errorf("input item type %q is not supported by the fake", it.Type)
		}
	}
	return conv, nil
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fail(w, err)
		return
	}
	conv, err := s.conversation(req)
	if err != nil {
		fail(w, err)
		return
	}
	var tools []Tool
	for _, t := range req.Tools {
		tools = append(tools, Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	rep, n, err := s.answer("responses", conv, tools)
	if err != nil {
		fail(w, err)
		return
	}
	id := fmt.Sprintf("resp_%d", n)
	var output []any
	if rep.Text != "" {
		output = append(output, map[string]any{
			"type": "message", "id": fmt.Sprintf("msg_%d", n), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": rep.Text, "annotations": []any{}}},
		})
		conv = append(conv, Msg{Role: "assistant", Text: rep.Text})
	}
	if len(rep.Calls) > 0 {
		for i, c := range rep.Calls {
			output = append(output, map[string]any{
				"type": "function_call", "id": fmt.Sprintf("fc_%d_%d", n, i), "call_id": c.ID,
				"name": c.Name, "arguments": c.Arguments, "status": "completed",
			})
		}
		conv = append(conv, Msg{Role: "assistant", Calls: rep.Calls})
	}
	s.mu.Lock()
	s.stored[id] = conv
	s.mu.Unlock()
	reply(w, map[string]any{
		"id": id, "object": "response", "created_at": 1767225600, "status": "completed",
		"model": req.Model, "output": output, "parallel_tool_calls": true, "tool_choice": "auto",
		"tools": []any{}, "temperature": 1.0, "top_p": 1.0, "error": nil, "incomplete_details": nil,
		"instructions": nil, "metadata": map[string]any{},
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 10, "total_tokens": 20,
			"input_tokens_details": map[string]int{"cached_tokens": 0}, "output_tokens_details": map[string]int{"reasoning_tokens": 0}},
	})
}
