// Package fakeapi is a Messages API server on loopback for tests and
// examples: the real SDK client talks HTTP to it, and a scripted Model
// decides each reply. It speaks the wire format, not the SDK's types, so
// what it sees is what the SDK really sent.
package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Request is a Messages API request as the server decoded it.
type Request struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools"`
}

// Last returns the request's last message (the zero Message if none).
func (r Request) Last() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// Message is one message of a request; string content is decoded as one
// text block.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// UnmarshalJSON accepts content as a string or as blocks, as the API does.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.Role = raw.Role
	var s string
	if json.Unmarshal(raw.Content, &s) == nil {
		m.Content = []Block{Text(s)}
		return nil
	}
	return json.Unmarshal(raw.Content, &m.Content)
}

// Tool is a tool definition of a request.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Block is a content block, of a request or of a reply.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// Content is a tool_result's content: a string or text blocks.
	Content json.RawMessage `json:"content,omitempty"`
}

// Text returns a text block.
func Text(s string) Block { return Block{Type: "text", Text: s} }

// ToolUse returns a tool_use block.
func ToolUse(id, name, input string) Block {
	return Block{Type: "tool_use", ID: id, Name: name, Input: json.RawMessage(input)}
}

// ResultText returns a tool_result block's content as one string.
func (b Block) ResultText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var parts []Block
	_ = json.Unmarshal(b.Content, &parts)
	for _, p := range parts {
		s += p.Text
	}
	return s
}

// Model decides the content of the reply to a request.
type Model func(req Request) []Block

// Server is the fake Messages API. It is safe for concurrent use.
type Server struct {
	*httptest.Server
	model Model

	mu       sync.Mutex // guards requests
	requests []Request
}

// New starts a server on loopback whose replies model decides. Close it
// when done.
func New(model Model) *Server {
	s := &Server{model: model}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.messages)
	s.Server = httptest.NewServer(mux)
	return s
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%q}}`, err.Error())
		return
	}
	if err := answered(req.Messages); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%q}}`, err.Error())
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	n := len(s.requests)
	s.mu.Unlock()

	content := s.model(req)
	stop := "end_turn"
	for _, b := range content {
		if b.Type == "tool_use" {
			stop = "tool_use"
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id":            fmt.Sprintf("msg_%d", n),
		"type":          "message",
		"role":          "assistant",
		"model":         req.Model,
		"content":       content,
		"stop_reason":   stop,
		"stop_sequence": nil,
		"usage":         map[string]int{"input_tokens": 10, "output_tokens": 10},
	})
}

// answered checks, as the API does, that every tool_use block is answered
// by a tool_result block with its id in the next message.
func answered(msgs []Message) error {
	for i, m := range msgs {
		if m.Role != "assistant" {
			continue
		}
		got := map[string]bool{}
		if i+1 < len(msgs) {
			for _, b := range msgs[i+1].Content {
				if b.Type == "tool_result" {
					got[b.ToolUseID] = true
				}
			}
		}
		for _, b := range m.Content {
			if b.Type == "tool_use" && !got[b.ID] {
				return fmt.Errorf("messages.%d: tool_use ids were found without tool_result blocks immediately after: %s", i, b.ID)
			}
		}
	}
	return nil
}
