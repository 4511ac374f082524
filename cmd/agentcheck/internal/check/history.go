package check

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
)

// Event kinds of a history.
const (
	// EvCall: a worker is about to call the harness for an intent.
	EvCall = "call"
	// EvAnswer: the harness answered a call.
	EvAnswer = "answer"
	// EvAttempt: a tool function started an attempt.
	EvAttempt = "attempt"
	// EvAttemptEnd: a tool function returned.
	EvAttemptEnd = "attempt-end"
	// EvReconcile: a Reconcile hook answered.
	EvReconcile = "reconcile"
	// EvRequest: the downstream received a request that may act.
	EvRequest = "request"
	// EvEffect: the downstream committed a side effect.
	EvEffect = "effect"
	// EvResponse: the downstream answered (or dropped) a request.
	EvResponse = "response"
	// EvProc: the runner started, killed or reaped a worker process.
	EvProc = "proc"
	// EvFault: the runner injected a fault outside the downstream (a
	// PostgreSQL backend terminated).
	EvFault = "fault"
	// EvDecide: the approver is about to send a decision (Note: approve,
	// reject or forge) about an intent awaiting approval.
	EvDecide = "decide"
	// EvDecided: the decision's result (Outcome: accepted, refused, maybe
	// or not-found).
	EvDecided = "decided"
)

// Event is one line of a history. Which fields are set depends on Ev.
type Event struct {
	// T is the wall-clock time in Unix nanoseconds.
	T int64 `json:"t"`
	// Ev is the event kind (EvCall, EvAnswer, …).
	Ev string `json:"ev"`
	// Proc names the process: a worker incarnation ("w1.3"), "downstream"
	// or "runner".
	Proc   string `json:"proc"`
	Intent string `json:"intent,omitempty"`
	// P is the payload index of the intent the event is about.
	P int `json:"p"`
	// Call is the call id (EvCall, EvAnswer).
	Call string `json:"call,omitempty"`
	// Key is the idempotency key.
	Key string `json:"key,omitempty"`
	// Attempt is the harness's attempt id, as the downstream saw it in
	// X-Request-Id.
	Attempt string `json:"attempt,omitempty"`
	// Status is the harness's status name as the API spells it
	// (EvAnswer).
	Status string `json:"status,omitempty"`
	// Outcome and Source are Status in the checker's words: Outcome is
	// what the intent ended with, Source how this call learnt it.
	Outcome string `json:"outcome,omitempty"`
	Source  string `json:"source,omitempty"`
	// Output is the tool's output (a success answer, an effect).
	Output json.RawMessage `json:"output,omitempty"`
	// Text is Result.ForModel, what the model was told.
	Text string `json:"text,omitempty"`
	Err  string `json:"err,omitempty"`
	// Code is an HTTP status (EvResponse).
	Code int `json:"code,omitempty"`
	// Effect numbers an intent's effects from 1 (EvEffect).
	Effect int `json:"effect,omitempty"`
	// QuietMS is, for an Unkeyed tool's attempt (EvAttempt), the window
	// its tool declares: from the attempt's start, Timeout + Settle, after
	// which the downstream no longer acts on it.
	QuietMS int64 `json:"quiet_ms,omitempty"`
	// Subject is the worker process a runner's event is about (EvProc,
	// EvFault).
	Subject string `json:"subject,omitempty"`
	// By names the approver (EvDecide, EvDecided).
	By string `json:"by,omitempty"`
	// Note says more: the action a request got, how a response was
	// delivered, what a process event was.
	Note string `json:"note,omitempty"`
}

// Answer outcomes (Event.Outcome), independent of the harness's enum.
const (
	OutSucceeded  = "succeeded"
	OutFailed     = "failed"
	OutSuppressed = "suppressed"
	OutInProgress = "in-progress"
	OutUnknown    = "unknown"
	OutRejected   = "rejected"
	OutAwaiting   = "awaiting-approval"
)

// Answer sources (Event.Source) of a succeeded answer.
const (
	SrcExecuted   = "executed"
	SrcReplayed   = "replayed"
	SrcCollapsed  = "collapsed"
	SrcReconciled = "reconciled"
)

// Log appends events to a JSON Lines file, one write per line. A process
// killed with SIGKILL mid-write may leave its last line cut short: the
// next OpenLog of the file starts on a new line, and ReadHistory skips the
// cut one. It is safe for concurrent use.
type Log struct {
	proc string
	mu   sync.Mutex // guards f
	f    *os.File
}

// OpenLog opens (creating or appending to) the history file at path for
// the process named proc. A file whose last line an earlier process, killed
// mid-write, cut short gets a newline first: the cut line stays apart
// (ReadHistory skips it) and the new lines stay whole.
func OpenLog(path, proc string) (*Log, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	last := make([]byte, 1)
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		if _, err := f.ReadAt(last, fi.Size()-1); err == nil && last[0] != '\n' {
			_, err = f.Write([]byte{'\n'})
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("history %s: %w", path, err)
			}
		}
	}
	return &Log{proc: proc, f: f}, nil
}

// Add stamps e with the time (unless set) and the log's process, and
// appends it. A failed write is reported to stderr and otherwise ignored:
// the history then shows the gap, and a run must not stop for it.
func (l *Log) Add(e Event) {
	if e.T == 0 {
		e.T = time.Now().UnixNano()
	}
	if e.Proc == "" {
		e.Proc = l.proc
	}
	b, err := json.Marshal(e)
	if err != nil {
		fmt.Fprintf(os.Stderr, "agentcheck: history: %v\n", err)
		return
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(b); err != nil {
		fmt.Fprintf(os.Stderr, "agentcheck: history: %v\n", err)
	}
}

// Close closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// ReadHistory reads the events of the files at paths and returns them
// ordered by time. A line cut short (a write interrupted by a kill: not
// JSON, and not ending in "}") is skipped; any other malformed line is an
// error naming the file and line.
func ReadHistory(paths ...string) ([]Event, error) {
	var all []Event
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("history %s: %w", p, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for n := 1; sc.Scan(); n++ {
			line := sc.Bytes()
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var e Event
			if err := json.Unmarshal(line, &e); err != nil {
				if !bytes.HasSuffix(bytes.TrimSpace(line), []byte("}")) {
					continue // cut off by a kill
				}
				return nil, fmt.Errorf("history %s line %d: %w", p, n, err)
			}
			all = append(all, e)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("history %s: %w", p, err)
		}
	}
	slices.SortStableFunc(all, func(a, b Event) int {
		switch {
		case a.T < b.T:
			return -1
		case a.T > b.T:
			return 1
		}
		return 0
	})
	return all, nil
}

// WriteHistory writes events to path as JSON Lines.
func WriteHistory(path string, events []Event) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("history %s: %w", path, err)
	}
	return nil
}
