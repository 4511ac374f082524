// Package fakeapi is an OpenAI API server on loopback for tests and
// examples: the real SDK client talks HTTP to it, for Chat Completions and
// for the Responses API, and one scripted Model decides the replies of
// both. It speaks the wire formats, not the SDK's types, so what it sees is
// what the SDK really sent; it refuses, as the API does, a request in
// which a tool call has no result.
package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Msg is one message of a conversation, the same for both APIs.
type Msg struct {
	// Role is "user", "assistant", "system" or "tool" (a tool call's
	// result: a Chat Completions tool message, a Responses
	// function_call_output item).
	Role string
	Text string
	// Calls are an assistant message's function calls.
	Calls []Call
	// CallID is the call a tool message answers.
	CallID string
}

// Call is one function call of the model.
type Call struct {
	ID, Name, Arguments string
}

// Reply is what the model answers: text, function calls, or both.
type Reply struct {
	Text  string
	Calls []Call
}

// Model decides the reply to a conversation (the whole of it, also when
// a Responses request chains on a previous response).
type Model func(conv []Msg) Reply

// Last returns the last message of conv (the zero Msg if none).
func Last(conv []Msg) Msg {
	if len(conv) == 0 {
		return Msg{}
	}
	return conv[len(conv)-1]
}

// Request is one request the server answered.
type Request struct {
	// API is "chat" or "responses".
	API string
	// Conv is the whole conversation the model saw.
	Conv []Msg
	// Tools are the request's function tools.
	Tools []Tool
}

// Tool is a function tool of a request.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Server is the fake API: POST /v1/chat/completions and POST
// /v1/responses. Point the client at URL + "/v1/". It is safe for
// concurrent use.
type Server struct {
	*httptest.Server
	model Model

	mu       sync.Mutex // guards requests, stored and n
	requests []Request
	stored   map[string][]Msg // a response's id → its conversation with its output
	n        int
}

// New starts a server on loopback whose replies model decides. Close it
// when done.
func New(model Model) *Server {
	s := &Server{model: model, stored: map[string][]Msg{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("POST /v1/responses", s.responses)
	s.Server = httptest.NewServer(mux)
	return s
}

// Requests returns the requests answered so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// answer checks conv, records the request and asks the model; it returns
// the reply and the request's number, from 1.
func (s *Server) answer(api string, conv []Msg, tools []Tool) (Reply, int, error) {
	if err := answered(conv); err != nil {
		return Reply{}, 0, err
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{API: api, Conv: conv, Tools: tools})
	s.n++
	n := s.n
	s.mu.Unlock()
	return s.model(conv), n, nil
}

// answered checks, as the APIs do, that every function call is answered
// by a tool message with its id after it.
func answered(conv []Msg) error {
	done := map[string]bool{}
	for i := len(conv) - 1; i >= 0; i-- {
		m := conv[i]
		if m.Role == "tool" {
			done[m.CallID] = true
		}
		for _, c := range m.Calls {
			if !done[c.ID] {
				return fmt.Errorf("no tool output found for function call %s", c.ID)
			}
		}
	}
	return nil
}

func fail(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": err.Error(), "type": "invalid_request_error", "param": nil, "code": nil,
	}})
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// text decodes content that is a string, null, or a list of parts with
// text.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	for _, p := range parts {
		s += p.Text
	}
	return s
}
