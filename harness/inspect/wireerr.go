package inspect

import (
	"context"
	"errors"

	"github.com/agentonce/agentonce/journal"
)

// Error codes beyond the journal's sentinels.
const (
	codeRefused  = "refused"
	codeVersion  = "version"
	codeInternal = "internal"
	codeBusy     = "busy"
)

// codes pairs each journal sentinel a request may meet with its wire code.
var codes = []struct {
	code string
	err  error
}{
	{"not_found", journal.ErrNotFound},
	{"not_resolvable", journal.ErrNotResolvable},
	{"fenced", journal.ErrFenced},
	{"invalid", journal.ErrInvalid},
	{"corrupt", journal.ErrCorrupt},
	{"newer_version", journal.ErrNewerVersion},
	{"read_only", journal.ErrReadOnly},
	{"closed", journal.ErrClosed},
	{"closed", context.Canceled}, // the server's context ends only at Close
}

func toWire(err error) *wireError {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return &wireError{Code: c.code, Message: err.Error()}
		}
	}
	return &wireError{Code: codeInternal, Message: err.Error()}
}

func fromWire(w *wireError) error {
	e := &RemoteError{Code: w.Code, Message: w.Message}
	for _, c := range codes {
		if c.code == w.Code {
			e.cause = c.err
			break
		}
	}
	switch w.Code {
	case codeRefused:
		e.cause = ErrForeignUser
	case codeVersion:
		e.cause = ErrVersion
	case codeBusy:
		e.cause = ErrBusy
	}
	return e
}
