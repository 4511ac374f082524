package agentoncetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/agentonce/agentonce/harness"
)

// Script is a transcript of model turns that a ScriptedModel replays.
// Its JSON form is the struct's, for example:
//
//	{"turns": [
//	  {"id": "1", "user": "charge 8812 49 USD", "steps": [
//	    {"calls": [{"id": "c1", "name": "charge_card", "input": {"customer": "8812", "cents": 4900}},
//	               {"id": "c2", "name": "charge_card", "input": {"customer": "8812", "cents": 4900}}]},
//	    {"expect": {"c1": "executed", "c2": "collapsed"}, "text": "Charged once."}
//	  ]}
//	]}
type Script struct {
	// Session names the conversation; empty is allowed.
	Session string `json:"session,omitempty"`
	Turns   []Turn `json:"turns"`
}

// Turn is one user message and the model's steps in answer to it. All
// the calls of a turn share the user turn in their intent: a model that
// re-plans within a turn produces the same keys.
type Turn struct {
	// ID is the user turn's id; empty means its position from 1.
	ID string `json:"id,omitempty"`
	// User is the user's message.
	User string `json:"user,omitempty"`
	// Steps are the model's responses in order; the last one (and only
	// the last) is a final answer: Text and no Calls.
	Steps []Step `json:"steps"`
}

// Step is one model response: tool calls (several are parallel calls
// from one response), or a final text.
type Step struct {
	Calls []ToolCall `json:"calls,omitempty"`
	Text  string     `json:"text,omitempty"`
	// Expect maps the ids of the previous step's calls to the result
	// status they must have had ("executed", "replayed", "collapsed",
	// "suppressed", "unknown", "failed", ...). Next refuses results that
	// differ: the script doubles as an assertion.
	Expect map[string]string `json:"expect,omitempty"`

	// Turn and User are filled in by ScriptedModel.Next: the id of the
	// user turn the step belongs to, and the user's message on the
	// turn's first step.
	Turn string `json:"-"`
	User string `json:"-"`
}

// Final reports whether the step is the model's final answer for the
// turn.
func (s Step) Final() bool { return len(s.Calls) == 0 }

// ToolCall is one tool call as a model emits it.
type ToolCall struct {
	// ID is the model's id for the call; results name it. Ids may repeat
	// across steps (a model re-issuing a call) but not within one.
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ToolResult is what the agent loop hands back for one call.
type ToolResult struct {
	CallID string `json:"call_id"`
	// Status is what happened: "executed", "replayed", "collapsed",
	// "reconciled" (a success, by how it was learned), "suppressed",
	// "unknown", "in-progress", "failed", "rejected", or anything the loop
	// uses.
	Status string `json:"status"`
	// Content is the text the model reads.
	Content string `json:"content,omitempty"`
}

// ResultOf is the ToolResult an agent loop hands back for r: a success is
// named by its Source, anything else by its Status, and the content is
// r.ForModel().
func ResultOf(r harness.Result) ToolResult {
	status := r.Status.String()
	if r.OK() {
		status = r.Source.String()
	}
	return ToolResult{CallID: r.CallID, Status: status, Content: r.ForModel()}
}

// ParseScript decodes a script from JSON and checks it. Errors wrap
// ErrBadScript and name the place: the byte offset of a syntax error, or
// the turn, step and call.
func ParseScript(data []byte) (Script, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return Script{}, fmt.Errorf("%w: at byte %d: %v", ErrBadScript, se.Offset, err)
		case errors.As(err, &te):
			return Script{}, fmt.Errorf("%w: at byte %d (field %s): %v", ErrBadScript, te.Offset, te.Field, err)
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
			return Script{}, fmt.Errorf("%w: at byte %d: unexpected end of input", ErrBadScript, len(data))
		}
		return Script{}, fmt.Errorf("%w: %v", ErrBadScript, err)
	}
	if dec.More() {
		return Script{}, fmt.Errorf("%w: at byte %d: text after the script object", ErrBadScript, dec.InputOffset())
	}
	if err := s.Validate(); err != nil {
		return Script{}, err
	}
	return s, nil
}

// LoadScript reads and parses a script file; errors name the file.
func LoadScript(path string) (Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Script{}, err
	}
	s, err := ParseScript(b)
	if err != nil {
		return Script{}, fmt.Errorf("script %s: %w", path, err)
	}
	return s, nil
}

// Validate checks that every turn ends in exactly one final answer, that
// every call has an id, a name and JSON input, and that no id repeats
// within a step. Errors wrap ErrBadScript.
func (s Script) Validate() error {
	if len(s.Turns) == 0 {
		return fmt.Errorf("%w: no turns", ErrBadScript)
	}
	for ti, t := range s.Turns {
		where := "turn " + strconv.Itoa(ti+1)
		if len(t.Steps) == 0 {
			return fmt.Errorf("%w: %s: no steps", ErrBadScript, where)
		}
		var prev map[string]bool // the ids of the step before
		for si, st := range t.Steps {
			where := where + " step " + strconv.Itoa(si+1)
			last := si == len(t.Steps)-1
			if st.Final() != last {
				if last {
					return fmt.Errorf("%w: %s: the last step must be a final answer (text, no calls)", ErrBadScript, where)
				}
				return fmt.Errorf("%w: %s: only the last step may be a final answer; this one has no calls", ErrBadScript, where)
			}
			seen := map[string]bool{}
			for ci, c := range st.Calls {
				where := where + " call " + strconv.Itoa(ci+1)
				switch {
				case c.ID == "":
					return fmt.Errorf("%w: %s: no id", ErrBadScript, where)
				case c.Name == "":
					return fmt.Errorf("%w: %s (id %q): no tool name", ErrBadScript, where, c.ID)
				case seen[c.ID]:
					return fmt.Errorf("%w: %s: id %q repeats within the step", ErrBadScript, where, c.ID)
				case len(c.Input) > 0 && !json.Valid(c.Input):
					return fmt.Errorf("%w: %s (id %q): input is not valid JSON", ErrBadScript, where, c.ID)
				}
				seen[c.ID] = true
			}
			if len(st.Expect) > 0 {
				if si == 0 {
					return fmt.Errorf("%w: %s: expect on a turn's first step has no calls before it to check", ErrBadScript, where)
				}
				for id := range st.Expect {
					if !prev[id] {
						return fmt.Errorf("%w: %s: expect names call %q, which the step before does not make", ErrBadScript, where, id)
					}
				}
			}
			prev = seen
		}
	}
	return nil
}

// ScriptedModel replays a Script as a model would answer an agent loop:
// each Next hands over the results of the previous step's calls and gets
// the next step. It is safe for concurrent use, though a conversation is
// sequential by nature.
type ScriptedModel struct {
	script Script

	// mu guards turn, step and log.
	mu   sync.Mutex
	turn int // index of the current turn
	step int // index of the next step within it
	log  []Exchange
}

// Exchange is one round of the conversation: the results handed to the
// model and the step it answered with.
type Exchange struct {
	Results []ToolResult
	Step    Step
}

// NewScriptedModel checks s and returns a model that replays it.
func NewScriptedModel(s Script) (*ScriptedModel, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &ScriptedModel{script: s}, nil
}

// Script returns the script the model replays.
func (m *ScriptedModel) Script() Script { return m.script }

// Next takes the results of the previous step's calls (nil at the start
// of a turn) and returns the next step. The results must answer each of
// the previous step's calls exactly once (in any order), and match its
// Expect; otherwise Next returns an error wrapping ErrUnexpectedResults
// and does not advance. After the last turn's final answer it returns
// ErrScriptDone.
func (m *ScriptedModel) Next(ctx context.Context, results []ToolResult) (Step, error) {
	if err := ctx.Err(); err != nil {
		return Step{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.turn >= len(m.script.Turns) {
		return Step{}, ErrScriptDone
	}
	t := m.script.Turns[m.turn]
	var prev []ToolCall
	if m.step > 0 {
		prev = t.Steps[m.step-1].Calls
	}
	st := t.Steps[m.step]
	if err := checkResults(prev, results, st.Expect); err != nil {
		return Step{}, fmt.Errorf("turn %d step %d: %w", m.turn+1, m.step+1, err)
	}
	st.Turn = t.ID
	if st.Turn == "" {
		st.Turn = strconv.Itoa(m.turn + 1)
	}
	if m.step == 0 {
		st.User = t.User
	}
	m.log = append(m.log, Exchange{Results: append([]ToolResult(nil), results...), Step: st})
	m.step++
	if m.step == len(t.Steps) {
		m.turn++
		m.step = 0
	}
	return st, nil
}

// Transcript returns every exchange so far, in order.
func (m *ScriptedModel) Transcript() []Exchange {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Exchange(nil), m.log...)
}

func checkResults(prev []ToolCall, results []ToolResult, expect map[string]string) error {
	want := make(map[string]bool, len(prev))
	for _, c := range prev {
		want[c.ID] = true
	}
	got := make(map[string]string, len(results))
	for _, r := range results {
		if !want[r.CallID] {
			return fmt.Errorf("%w: result for call %q, which the previous step did not make", ErrUnexpectedResults, r.CallID)
		}
		if _, dup := got[r.CallID]; dup {
			return fmt.Errorf("%w: two results for call %q", ErrUnexpectedResults, r.CallID)
		}
		got[r.CallID] = r.Status
	}
	for _, c := range prev {
		if _, ok := got[c.ID]; !ok {
			return fmt.Errorf("%w: no result for call %q (%s)", ErrUnexpectedResults, c.ID, c.Name)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(expect)) {
		if got[id] != expect[id] {
			return fmt.Errorf("%w: call %q: status %q; want %q", ErrUnexpectedResults, id, got[id], expect[id])
		}
	}
	return nil
}
