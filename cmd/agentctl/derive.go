package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/spf13/pflag"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

var deriveCommand = &command{
	name:    "derive",
	args:    "[flags] INPUT | --diff [flags] INPUT INPUT",
	summary: "print the key, fingerprint and canonical input of an intent",
	long: `Derives what the harness would for one call: the canonical input, its
fingerprint, and the key under the journal's namespace. It answers "why did
these two calls get different keys?". It also says whether the journal holds
a record for that key.

INPUT is the tool's input JSON, @FILE to read it from a file, or - for
standard input. It may also be the KEY (a UUID) of a recorded intent whose
canonical input is stored: then the intent fields come from that record.

With --diff, two INPUTs are derived under the same intent flags and every
place where their canonical forms differ is listed (a JSON path and both
values), with the first differing byte. Comparing two recorded KEYs also
compares their intent fields.

--schema and --volatile apply the tool's schema-aware normalization, as
the harness does when the tool declares them. --namespace derives without a
journal (and then KEY inputs are not available).`,
	main: withRun(deriveCmd, runDerive),
}

type deriveOptions struct {
	journal   journalFlags
	intent    keyderive.Intent
	step      string
	schema    string
	volatile  string
	namespace string
	showNS    bool
	diff      bool
	json      bool
	inputs    []string
}

func deriveCmd(e *env, fs *pflag.FlagSet, run runFunc[deriveOptions]) func(context.Context, []string) error {
	var o deriveOptions
	o.journal.register(fs)
	fs.StringVar(&o.intent.Tenant, "tenant", "", "the intent's `TENANT`")
	fs.StringVar(&o.intent.Session, "session", "", "the intent's `SESSION`")
	fs.StringVar(&o.intent.Turn, "turn", "", "the intent's user `TURN`")
	fs.StringVar(&o.intent.Tool, "tool", "", "the `TOOL`'s registered name")
	fs.StringVar(&o.intent.Discriminator, "discriminator", "", "the intent's `DISCRIMINATOR`, if the caller set one")
	fs.StringVar(&o.step, "step", "", "an explicit step `KEY` (workflow form): the key is derived from tenant and step key only")
	fs.StringVar(&o.schema, "schema", "", "the tool's input JSON Schema `FILE`, for normalization (drop nulls, fill defaults)")
	fs.StringVar(&o.volatile, "volatile", "", "comma-separated `FIELDS` the tool marks volatile (dropped before keying)")
	fs.StringVar(&o.namespace, "namespace", "", "derive under this namespace `UUID` instead of the journal's")
	fs.BoolVar(&o.showNS, "show-namespace", false, "print the namespace, a secret that lets anyone predict this deployment's keys")
	fs.BoolVar(&o.diff, "diff", false, "compare two inputs and show where their canonical forms differ")
	fs.BoolVar(&o.json, "json", false, "print the derivation as JSON (see 'agentctl help json')")
	return func(ctx context.Context, pos []string) error {
		want := 1
		if o.diff {
			want = 2
		}
		if len(pos) != want {
			if o.diff {
				return usageErrorf("--diff wants two INPUTs, got %d", len(pos))
			}
			return usageErrorf("want one INPUT (JSON, @FILE or -), got %d arguments", len(pos))
		}
		if o.diff && pos[0] == "-" && pos[1] == "-" {
			return usageErrorf("only one INPUT can be - (standard input)")
		}
		o.inputs = pos
		return run(ctx, e, &o)
	}
}

// side is one derivation: the intent, the raw input, and what came of it.
type side struct {
	from    string // how the input was given, for messages
	intent  keyderive.Intent
	input   []byte
	derived keyderive.Derived
	// recorded is the record an INPUT KEY named; nil for literal inputs.
	recorded *journal.Record
	// state is the journal's record for derived.Key: "" when none.
	state       string
	fingerprint string // the stored fingerprint, when a record exists
}

type derivedJSON struct {
	Namespace     string          `json:"namespace,omitempty"` // only with --show-namespace
	Tenant        string          `json:"tenant"`
	Session       string          `json:"session"`
	Turn          string          `json:"turn"`
	Tool          string          `json:"tool"`
	Discriminator string          `json:"discriminator"`
	Step          string          `json:"step,omitempty"`
	Key           string          `json:"key"`
	Fingerprint   string          `json:"fingerprint"`
	Canonical     json.RawMessage `json:"canonical"`
	JournalState  string          `json:"journal_state"`
}

type diffEntry struct {
	Path string `json:"path"`
	// A and B are the values on each side; a side where the path does
	// not exist omits its field.
	A json.RawMessage `json:"a,omitempty"`
	B json.RawMessage `json:"b,omitempty"`
}

type deriveDiffJSON struct {
	A               derivedJSON `json:"a"`
	B               derivedJSON `json:"b"`
	SameKey         bool        `json:"same_key"`
	FirstDifference int         `json:"first_difference"`
	Differences     []diffEntry `json:"differences"`
}

func runDerive(ctx context.Context, e *env, o *deriveOptions) error {
	d, store, err := openDeriver(ctx, e, o)
	if err != nil {
		return err
	}
	if store != nil {
		defer store.Close()
	}
	if d.Normalizer, err = normalizerFlags(o); err != nil {
		return err
	}
	sides := make([]*side, len(o.inputs))
	for i, in := range o.inputs {
		if sides[i], err = deriveSide(ctx, e, d, store, o, in); err != nil {
			return err
		}
	}
	// The namespace is the deployment's secret: anyone who has it can
	// predict its keys. It is printed only when asked.
	ns := ""
	if o.showNS {
		ns = d.Namespace.String()
	}
	if !o.diff {
		if o.json {
			return writeOneJSON(e, toDerivedJSON(ns, o.step, sides[0]))
		}
		return writeSideRows(e, ns, o.step, sides[0])
	}
	out := diffSides(ns, o.step, sides[0], sides[1])
	if o.json {
		return writeOneJSON(e, out)
	}
	return writeDiffRows(e, out)
}

// openDeriver returns a deriver under --namespace, or under the journal's
// namespace with the journal open read-only (nil with --namespace; the
// caller closes it).
func openDeriver(ctx context.Context, e *env, o *deriveOptions) (*keyderive.Deriver, journal.Store, error) {
	if o.namespace != "" {
		ns, err := uuid.Parse(o.namespace)
		if err != nil {
			return nil, nil, usageErrorf("--namespace %q is not a UUID: %v", o.namespace, err)
		}
		return &keyderive.Deriver{Namespace: ns}, nil, nil
	}
	s, err := o.journal.open(ctx, e, true)
	if err != nil {
		return nil, nil, err
	}
	return &keyderive.Deriver{Namespace: s.Namespace()}, s, nil
}

// normalizerFlags builds the normalizer --schema and --volatile ask for;
// nil when neither is given.
func normalizerFlags(o *deriveOptions) (*keyderive.Normalizer, error) {
	if o.schema == "" && o.volatile == "" {
		return nil, nil
	}
	var schema []byte
	if o.schema != "" {
		b, err := os.ReadFile(o.schema)
		if err != nil {
			return nil, usageErrorf("--schema: %v", err)
		}
		schema = b
	}
	var vol []string
	for _, f := range strings.Split(o.volatile, ",") {
		if f = strings.TrimSpace(f); f != "" {
			vol = append(vol, f)
		}
	}
	n, err := keyderive.NewNormalizer(schema, vol)
	if err != nil {
		return nil, usageErrorf("--schema %s: %v", o.schema, err)
	}
	return n, nil
}

// deriveSide loads one INPUT, derives its key, and looks the key up in
// the journal when there is one.
func deriveSide(ctx context.Context, e *env, d *keyderive.Deriver, store journal.Store, o *deriveOptions, in string) (*side, error) {
	sd, err := loadSide(ctx, e, store, o, in)
	if err != nil {
		return nil, err
	}
	if o.step != "" {
		sd.derived, err = d.DeriveExplicit(sd.intent, o.step, sd.input)
	} else {
		sd.derived, err = d.Derive(sd.intent, sd.input)
	}
	if err != nil {
		return nil, usageErrorf("input %s: %v", sd.from, err)
	}
	if store == nil {
		return sd, nil
	}
	r, err := store.Get(ctx, sd.derived.Key)
	switch {
	case err == nil:
		sd.state = r.State.String()
		if !r.Fingerprint.IsZero() {
			sd.fingerprint = r.Fingerprint.String()
		}
	case !isNotFound(err):
		return nil, err
	}
	return sd, nil
}

// diffSides compares two derivations: the intent fields, then the
// canonical inputs.
func diffSides(ns, step string, a, b *side) *deriveDiffJSON {
	out := &deriveDiffJSON{
		A: toDerivedJSON(ns, step, a), B: toDerivedJSON(ns, step, b),
		SameKey:         a.derived.Key == b.derived.Key,
		FirstDifference: firstDifference(a.derived.Canonical, b.derived.Canonical),
		Differences:     intentDiff(a.intent, b.intent),
	}
	out.Differences = append(out.Differences, jsonDiff(a.derived.Canonical, b.derived.Canonical)...)
	return out
}

// loadSide reads one INPUT: a recorded KEY, @FILE, - or literal JSON.
func loadSide(ctx context.Context, e *env, store journal.Store, o *deriveOptions, in string) (*side, error) {
	sd := &side{from: in, intent: o.intent}
	switch {
	case in == "-":
		b, err := io.ReadAll(e.stdin)
		if err != nil {
			return nil, fmt.Errorf("reading standard input: %w", err)
		}
		sd.from, sd.input = "(standard input)", b
	case strings.HasPrefix(in, "@"):
		b, err := os.ReadFile(in[1:])
		if err != nil {
			return nil, usageErrorf("input %v", err)
		}
		sd.input = b
	default:
		// Only the 36-character form counts as a KEY: a UUID is not JSON,
		// but 32 digits are a JSON number.
		key, err := uuid.Parse(in)
		if err != nil || len(in) != 36 {
			sd.input = []byte(in)
			if len(in) > 40 {
				sd.from = in[:37] + "..."
			}
			break
		}
		if store == nil {
			return nil, usageErrorf("input %s is a KEY, which needs the journal: drop --namespace", in)
		}
		r, err := loadRecord(ctx, store, key)
		if err != nil {
			return nil, err
		}
		if r.Input == nil {
			return nil, &cliError{code: exitUsage, err: fmt.Errorf("record %s keeps only the fingerprint of its input", key),
				hint: "pass the input as JSON with the intent flags instead"}
		}
		sd.from, sd.intent, sd.input, sd.recorded = "record "+key.String(), r.Intent, r.Input, &r
	}
	return sd, nil
}

func toDerivedJSON(ns string, step string, sd *side) derivedJSON {
	return derivedJSON{
		Namespace: ns, Tenant: sd.intent.Tenant, Session: sd.intent.Session, Turn: sd.intent.Turn,
		Tool: sd.intent.Tool, Discriminator: sd.intent.Discriminator, Step: step,
		Key: sd.derived.Key.String(), Fingerprint: sd.derived.Fingerprint.String(),
		Canonical: json.RawMessage(sd.derived.Canonical), JournalState: sd.state,
	}
}

func writeOneJSON(e *env, v any) error {
	jw := newJSONWriter(e.stdout)
	if err := jw.write(v); err != nil {
		return err
	}
	return jw.flush()
}

// journalNote says what the journal holds for the derived key.
func journalNote(sd *side) string {
	switch {
	case sd.state == "":
		return "no record for this key"
	case sd.fingerprint != "" && sd.fingerprint != sd.derived.Fingerprint.String():
		return "record " + sd.state + ", different fingerprint (a call would be suppressed as a mismatch)"
	}
	return "record " + sd.state
}

func writeSideRows(e *env, ns string, step string, sd *side) error {
	rw := newRowWriter(e.stdout, e.stdoutTTY)
	rw.dash = e.stdoutTTY
	if ns == "" {
		ns = "(secret; --show-namespace prints it)"
	}
	rw.row("namespace", ns)
	rw.row("tenant", sd.intent.Tenant)
	rw.row("session", sd.intent.Session)
	rw.row("turn", sd.intent.Turn)
	rw.row("tool", sd.intent.Tool)
	rw.row("discriminator", sd.intent.Discriminator)
	if step != "" {
		rw.row("step", step)
	}
	rw.row("key", sd.derived.Key.String())
	rw.row("fingerprint", sd.derived.Fingerprint.String())
	rw.row("canonical", string(sd.derived.Canonical))
	if sd.recorded != nil && sd.recorded.Key != sd.derived.Key {
		rw.row("note", "the record's key is "+sd.recorded.Key.String()+": it was derived differently (a step key, another namespace or normalizer)")
	}
	rw.row("journal", journalNote(sd))
	return rw.flush()
}

func writeDiffRows(e *env, out *deriveDiffJSON) error {
	rw := newRowWriter(e.stdout, e.stdoutTTY)
	if e.stdoutTTY {
		rw.row("", "A", "B")
	}
	rw.row("key", out.A.Key, out.B.Key)
	rw.row("fingerprint", out.A.Fingerprint, out.B.Fingerprint)
	rw.row("journal", stateOrNone(out.A.JournalState), stateOrNone(out.B.JournalState))
	if err := rw.flush(); err != nil {
		return err
	}
	rw = newRowWriter(e.stdout, e.stdoutTTY)
	rw.row("canonical_a", string(out.A.Canonical))
	rw.row("canonical_b", string(out.B.Canonical))
	if err := rw.flush(); err != nil {
		return err
	}
	if e.stdoutTTY {
		switch {
		case out.SameKey:
			fmt.Fprintln(e.stdout, "\nSame key: the harness treats both calls as one intent.")
		case len(out.Differences) == 0:
			fmt.Fprintln(e.stdout, "\nDifferent keys, same canonical input and intent fields: a different step key or namespace.")
		default:
			fmt.Fprintf(e.stdout, "\nDifferent keys. Canonical forms first differ at byte %d. Differences:\n", out.FirstDifference)
		}
	}
	rw = newRowWriter(e.stdout, e.stdoutTTY)
	if e.stdoutTTY && len(out.Differences) > 0 {
		rw.row("PATH", "A", "B")
	}
	if !e.stdoutTTY {
		rw.row("first_difference", strconv.Itoa(out.FirstDifference))
	}
	for _, d := range out.Differences {
		if e.stdoutTTY {
			rw.row(d.Path, rawOrAbsent(d.A), rawOrAbsent(d.B))
		} else {
			rw.row("difference", d.Path, rawOrAbsent(d.A), rawOrAbsent(d.B))
		}
	}
	return rw.flush()
}

func stateOrNone(s string) string {
	if s == "" {
		return "(no record)"
	}
	return s
}

func rawOrAbsent(r json.RawMessage) string {
	if r == nil {
		return "(absent)"
	}
	return string(r)
}

// firstDifference is the byte offset where a and b first differ, or -1.
func firstDifference(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return n
	}
	return -1
}

// intentDiff lists the intent fields that differ, as paths "@tenant" etc.
// (the "@" keeps them apart from input paths, which start with "$").
func intentDiff(a, b keyderive.Intent) []diffEntry {
	var out []diffEntry
	add := func(name, x, y string) {
		if x != y {
			out = append(out, diffEntry{Path: "@" + name, A: quoteJSON(x), B: quoteJSON(y)})
		}
	}
	add("tenant", a.Tenant, b.Tenant)
	add("session", a.Session, b.Session)
	add("turn", a.Turn, b.Turn)
	add("tool", a.Tool, b.Tool)
	add("discriminator", a.Discriminator, b.Discriminator)
	return out
}

func quoteJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// jsonDiff walks two canonical JSON documents and lists the paths where
// they differ: a value present on one side only has the other side nil.
func jsonDiff(a, b []byte) []diffEntry {
	va, erra := decodeNumbers(a)
	vb, errb := decodeNumbers(b)
	if erra != nil || errb != nil {
		if bytes.Equal(a, b) {
			return nil
		}
		return []diffEntry{{Path: "$", A: a, B: b}}
	}
	var out []diffEntry
	walkDiff("$", va, vb, &out)
	return out
}

func decodeNumbers(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func childPath(path, name string) string {
	if identRE.MatchString(name) {
		return path + "." + name
	}
	return path + "[" + string(quoteJSON(name)) + "]"
}

func walkDiff(path string, a, b any, out *[]diffEntry) {
	ma, aObj := a.(map[string]any)
	mb, bObj := b.(map[string]any)
	if aObj && bObj {
		names := make([]string, 0, len(ma)+len(mb))
		for k := range ma {
			names = append(names, k)
		}
		for k := range mb {
			if _, ok := ma[k]; !ok {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		for _, k := range names {
			va, ina := ma[k]
			vb, inb := mb[k]
			p := childPath(path, k)
			switch {
			case !ina:
				*out = append(*out, diffEntry{Path: p, B: marshalCompact(vb)})
			case !inb:
				*out = append(*out, diffEntry{Path: p, A: marshalCompact(va)})
			default:
				walkDiff(p, va, vb, out)
			}
		}
		return
	}
	sa, aArr := a.([]any)
	sb, bArr := b.([]any)
	if aArr && bArr {
		for i := 0; i < max(len(sa), len(sb)); i++ {
			p := path + "[" + strconv.Itoa(i) + "]"
			switch {
			case i >= len(sa):
				*out = append(*out, diffEntry{Path: p, B: marshalCompact(sb[i])})
			case i >= len(sb):
				*out = append(*out, diffEntry{Path: p, A: marshalCompact(sa[i])})
			default:
				walkDiff(p, sa[i], sb[i], out)
			}
		}
		return
	}
	ja, jb := marshalCompact(a), marshalCompact(b)
	if !bytes.Equal(ja, jb) {
		*out = append(*out, diffEntry{Path: path, A: ja, B: jb})
	}
}

func marshalCompact(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return json.RawMessage(`null`)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}
