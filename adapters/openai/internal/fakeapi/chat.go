package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
)

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
		ToolCallID string `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fail(w, err)
		return
	}
	var conv []Msg
	for _, m := range req.Messages {
		msg := Msg{Role: m.Role, Text: text(m.Content), CallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msg.Calls = append(msg.Calls, Call{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		conv = append(conv, msg)
	}
	var tools []Tool
	for _, t := range req.Tools {
		tools = append(tools, Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	rep, n, err := s.answer("chat", conv, tools)
	if err != nil {
		fail(w, err)
		return
	}
	message := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if rep.Text != "" {
		message["content"] = rep.Text
	}
	finish := "stop"
	if len(rep.Calls) > 0 {
		finish = "tool_calls"
		var calls []any
		for _, c := range rep.Calls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		message["tool_calls"] = calls
	}
	reply(w, map[string]any{
		"id":      fmt.Sprintf("chatcmpl-%d", n),
		"object":  "chat.completion",
		"created": 1767225600,
		"model":   req.Model,
		"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish, "logprobs": nil}},
		"usage":   map[string]int{"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
	})
}
