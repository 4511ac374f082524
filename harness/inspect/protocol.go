package inspect

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentonce/agentonce/journal"
)

// Version is the protocol version this package speaks.
const Version = 1

// protocolName opens every hello, to tell a stray peer apart.
const protocolName = "agentonce-inspect"

// SocketPath is where the agent of the bbolt journal at journalPath serves
// the protocol: "<journal>.sock".
func SocketPath(journalPath string) string { return journalPath + ".sock" }

// hello opens a connection, from each end.
type hello struct {
	Protocol string `json:"protocol"`
	Version  int    `json:"version"`
	// The server's hello says which agent answers.
	Namespace string `json:"namespace,omitempty"`
	Journal   string `json:"journal,omitempty"`
	PID       int    `json:"pid,omitempty"`
	Owner     string `json:"owner,omitempty"`
	// The server's bounds, for the client to keep to.
	MaxFrame int        `json:"max_frame,omitempty"`
	IdleMS   int64      `json:"idle_ms,omitempty"`
	Error    *wireError `json:"error,omitempty"`
}

// request is one client request; Op says which fields matter.
type request struct {
	Op         string      `json:"op"`
	Key        string      `json:"key,omitempty"`
	Filter     *Filter     `json:"filter,omitempty"`
	Resolution *Resolution `json:"resolution,omitempty"`
}

// Request ops.
const (
	opGet     = "get"
	opList    = "list"
	opStats   = "stats"
	opGC      = "gc_dry_run"
	opResolve = "resolve"
	opEvents  = "events"
)

// response is one server line; exactly one field is set.
type response struct {
	Record *Record `json:"record,omitempty"`
	Stats  *Stats  `json:"stats,omitempty"`
	GC     *GC     `json:"gc,omitempty"`
	End    bool    `json:"end,omitempty"`
	// Subscribed acknowledges "events": every event from now on follows.
	Subscribed bool       `json:"subscribed,omitempty"`
	Event      *Event     `json:"event,omitempty"`
	Dropped    int        `json:"dropped,omitempty"`
	Bye        string     `json:"bye,omitempty"`
	Error      *wireError `json:"error,omitempty"`
}

type wireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Record is a journal.Record on the wire, in its JSON form, decoded by
// ToRecord so that a record this version cannot read is an error of that
// record, not of the connection.
type Record struct{ json.RawMessage }

// Resolution is a journal.Resolution on the wire.
type Resolution struct {
	State       string    `json:"state"`
	Output      []byte    `json:"output"`
	Reason      string    `json:"reason"`
	By          string    `json:"by"`
	At          time.Time `json:"at"`
	Fingerprint string    `json:"fingerprint,omitempty"`
}

// Filter is a journal.Filter on the wire.
type Filter struct {
	Tenant  string    `json:"tenant,omitempty"`
	Session string    `json:"session,omitempty"`
	Turn    string    `json:"turn,omitempty"`
	Tool    string    `json:"tool,omitempty"`
	State   string    `json:"state,omitempty"`
	Since   time.Time `json:"since,omitzero"`
	Until   time.Time `json:"until,omitzero"`
	Limit   int       `json:"limit,omitempty"`
}

// Stats is a journal.Stats on the wire.
type Stats struct {
	Records        int            `json:"records"`
	ByState        map[string]int `json:"by_state"`
	ByTool         map[string]int `json:"by_tool"`
	Attempts       int            `json:"attempts"`
	Expired        int            `json:"expired"`
	OverdueUnknown int            `json:"overdue_unknown"`
	Oldest         time.Time      `json:"oldest"`
	Newest         time.Time      `json:"newest"`
	SizeBytes      int64          `json:"size_bytes"`
}

// GC is a journal.GCResult on the wire.
type GC struct {
	Removed     int `json:"removed"`
	KeptUnknown int `json:"kept_unknown"`
}

// Event is a harness.Event on the wire, its kinds and classes by name.
type Event struct {
	Time     time.Time `json:"time"`
	Kind     string    `json:"kind"`
	Tool     string    `json:"tool"`
	Session  string    `json:"session"`
	Turn     string    `json:"turn"`
	Key      string    `json:"key"`
	Attempt  string    `json:"attempt,omitempty"`
	Attempts int       `json:"attempts"`
	Class    string    `json:"class,omitempty"`
	// DelayMS is the wait before the next try, in milliseconds.
	DelayMS int64  `json:"delay_ms,omitempty"`
	Status  string `json:"status,omitempty"`
	Source  string `json:"source,omitempty"`
	Error   string `json:"error,omitempty"`
}

// FromRecord converts a record to its wire form.
func FromRecord(r *journal.Record) *Record {
	b, err := json.Marshal(r)
	if err != nil { // journal.Record.MarshalJSON fails on nothing
		panic(fmt.Sprintf("inspect: encoding record %s: %v", r.Key, err))
	}
	return &Record{b}
}

func fromResolution(res *journal.Resolution) *Resolution {
	w := &Resolution{State: res.State.String(), Output: res.Output, Reason: res.Reason, By: res.By, At: res.At}
	if !res.Fingerprint.IsZero() {
		w.Fingerprint = res.Fingerprint.String()
	}
	return w
}

// ToRecord converts a wire record back (journal.Record.UnmarshalJSON).
func (w *Record) ToRecord() (journal.Record, error) {
	var r journal.Record
	if err := json.Unmarshal(w.RawMessage, &r); err != nil {
		return journal.Record{}, fmt.Errorf("record from the agent: %w", err)
	}
	return r, nil
}

func (w *Resolution) toResolution() (journal.Resolution, error) {
	st, err := journal.ParseState(w.State)
	if err != nil {
		return journal.Resolution{}, fmt.Errorf("%w: resolution: %v", journal.ErrNewerVersion, err)
	}
	res := journal.Resolution{State: st, Output: w.Output, Reason: w.Reason, By: w.By, At: w.At}
	if w.Fingerprint != "" {
		if len(w.Fingerprint) != 2*len(res.Fingerprint) { // else hex.Decode panics
			err = hex.ErrLength
		} else {
			_, err = hex.Decode(res.Fingerprint[:], []byte(w.Fingerprint))
		}
		if err != nil {
			return res, fmt.Errorf("%w: resolution: fingerprint %q is not %d hex digits", journal.ErrInvalid, w.Fingerprint, 2*len(res.Fingerprint))
		}
	}
	return res, nil
}

func fromFilter(f *journal.Filter) *Filter {
	w := &Filter{Tenant: f.Tenant, Session: f.Session, Turn: f.Turn, Tool: f.Tool,
		Since: f.Since, Until: f.Until, Limit: f.Limit}
	if f.State != 0 {
		w.State = f.State.String()
	}
	return w
}

func (w *Filter) toFilter() (journal.Filter, error) {
	f := journal.Filter{Tenant: w.Tenant, Session: w.Session, Turn: w.Turn, Tool: w.Tool,
		Since: w.Since, Until: w.Until, Limit: w.Limit}
	if w.State != "" {
		st, err := journal.ParseState(w.State)
		if err != nil {
			return f, fmt.Errorf("%w: filter: %v", journal.ErrInvalid, err)
		}
		f.State = st
	}
	return f, nil
}

func fromStats(st *journal.Stats) *Stats {
	w := &Stats{Records: st.Records, ByState: map[string]int{}, ByTool: st.ByTool, Attempts: st.Attempts,
		Expired: st.Expired, OverdueUnknown: st.OverdueUnknown, Oldest: st.Oldest, Newest: st.Newest,
		SizeBytes: st.SizeBytes}
	for s, n := range st.ByState {
		w.ByState[s.String()] = n
	}
	return w
}

func (w *Stats) toStats() (journal.Stats, error) {
	st := journal.Stats{Records: w.Records, ByState: map[journal.State]int{}, ByTool: w.ByTool,
		Attempts: w.Attempts, Expired: w.Expired, OverdueUnknown: w.OverdueUnknown,
		Oldest: w.Oldest, Newest: w.Newest, SizeBytes: w.SizeBytes}
	if st.ByTool == nil {
		st.ByTool = map[string]int{}
	}
	for name, n := range w.ByState {
		s, err := journal.ParseState(name)
		if err != nil {
			return st, fmt.Errorf("stats: %w: %v", journal.ErrNewerVersion, err)
		}
		st.ByState[s] = n
	}
	return st, nil
}
