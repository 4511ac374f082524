package agentoncetest

import "errors"

// Errors returned by the Downstream.
var (
	// ErrBadState is returned by NewDownstream when DownstreamOptions.StateFile
	// exists but is not a state file this package wrote (or is damaged).
	ErrBadState = errors.New("not a downstream state file")
)

// Errors returned by the scripted model.
var (
	// ErrScriptDone is returned by ScriptedModel.Next after the final
	// answer of the last turn: the conversation is over.
	ErrScriptDone = errors.New("script done: no more model turns")
	// ErrBadScript is returned (wrapped, with the place) when a script is
	// malformed: bad JSON, a call without id or name, a turn without a
	// final answer.
	ErrBadScript = errors.New("bad model script")
	// ErrUnexpectedResults is returned (wrapped, naming the call) by
	// ScriptedModel.Next when the results handed to it do not answer the
	// calls of the step before, or do not have the status a step expects.
	ErrUnexpectedResults = errors.New("tool results do not match the script")
)
