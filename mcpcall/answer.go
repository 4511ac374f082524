package mcpcall

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/retryclass"
)

// Answer is what the client gets for a call, for an adapter to put into its
// SDK's CallToolResult.
type Answer struct {
	// Text is the one text content: Result.ForModel, and for a call placed
	// by the window whose answer is an earlier call's, a note saying so and
	// how to repeat on purpose.
	Text string
	// IsError is set unless the intent succeeded.
	IsError bool
	// Structured is the output of a success that is a JSON object (MCP
	// accepts no other structured content); nil otherwise.
	Structured json.RawMessage
	// Meta is the result's _meta: MetaStatus, MetaSource, and MetaKey and
	// MetaWindow when there are.
	Meta map[string]any
}

// AnswerOf words the Result of the call c.
//
//   - Succeeded: IsError false; the text is the output.
//   - Failed: IsError true; nothing was done, and the model may correct
//     its input.
//   - Suppressed, Unknown, InProgress: IsError true; the text tells the
//     model not to retry and not to change the input.
//   - Rejected: IsError true; the call was refused and nothing started.
func AnswerOf(res harness.Result, c Call) Answer {
	a := Answer{
		Text:    res.ForModel(),
		IsError: !res.OK(),
		Meta:    map[string]any{MetaStatus: res.Status.String(), MetaSource: res.Source.String()},
	}
	if res.Key != uuid.Nil {
		a.Meta[MetaKey] = res.Key.String()
	}
	if res.OK() && isObject(res.Output) {
		a.Structured = res.Output
	}
	if c.Placement == ByWindow {
		a.Meta[MetaWindow] = c.WindowLabel
	}
	if note := Note(res, c); note != "" {
		a.Text += "\n\n" + note
	}
	return a
}

// Note is what AnswerOf adds to the text of a call placed by the window
// whose answer is an earlier call's: that the action was not done again,
// and how to repeat it on purpose. It is empty for any other call.
func Note(res harness.Result, c Call) string {
	if c.Placement != ByWindow || (res.Source != harness.Replayed && res.Source != harness.Collapsed) {
		return ""
	}
	return "Note: an identical " + c.Tool + " call (same input) was made in the last " + c.Window.String() +
		", so this is that call's outcome and the action was not done again. " +
		"Only if the user wants it done once more, call " + c.Tool + " again with \"" + RepeatArgument +
		"\" set to a value not used before (for example \"2\")."
}

// Refusal is the answer to a call that did not run.
func Refusal(err error) Answer {
	return Answer{
		Text:    err.Error(),
		IsError: true,
		Meta:    map[string]any{MetaStatus: harness.Rejected.String(), MetaSource: harness.NoSource.String()},
	}
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	b := bytes.TrimSpace(raw)
	return len(b) > 0 && b[0] == '{'
}

// UnderWay reports whether res says the intent is still being worked on —
// InProgress, or suppressed because another caller holds it past the
// in-flight budget — so that asking again later gets its outcome. A task
// (the MCP tasks utility) stays working while this holds.
func UnderWay(res harness.Result) bool {
	if res.Status == harness.InProgress {
		return true
	}
	var oe *harness.OutcomeError
	return res.Status == harness.Suppressed && errors.As(res.Err, &oe) && oe.Class == retryclass.InFlight
}
