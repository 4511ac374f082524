package downstream

import "encoding/json"

// Reconciliation is a Reconcile hook's answer to "did the effect for this
// key happen downstream?" (harness.Tool.Reconcile). The zero value is
// CannotTell.
type Reconciliation struct {
	verdict verdict
	output  json.RawMessage
	why     error
}

type verdict uint8

const (
	cannotTell verdict = iota
	happened
	didNotHappen
)

// Happened says the effect happened; output is the tool's result.
func Happened(output json.RawMessage) Reconciliation {
	return Reconciliation{verdict: happened, output: output}
}

// DidNotHappen says the effect provably did not happen: the tool may run.
func DidNotHappen() Reconciliation { return Reconciliation{verdict: didNotHappen} }

// CannotTell says the hook cannot tell yet; why says what stopped it.
func CannotTell(why error) Reconciliation { return Reconciliation{why: why} }

// Happened reports whether r says the effect happened, and its output.
func (r Reconciliation) Happened() (json.RawMessage, bool) {
	return r.output, r.verdict == happened
}

// DidNotHappen reports whether r says the effect provably did not happen.
func (r Reconciliation) DidNotHappen() bool { return r.verdict == didNotHappen }

// Why is what stopped a hook that cannot tell.
func (r Reconciliation) Why() error { return r.why }
