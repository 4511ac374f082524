package main

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/pflag"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/keyderive"
)

// These tests parse each command's flags with a run function that only
// records the options it is given: no journal is opened, so they check the
// parsing alone. The journal paths named here do not exist.

// parseOnly runs a command's main over args with a recording run function.
// It returns the options run was given (nil when run was not called) and
// main's error.
func parseOnly[O any](setup setupFunc[O], args ...string) (*O, error) {
	e, _, _ := testEnv(false)
	var got *O
	record := func(_ context.Context, _ *env, o *O) error {
		got = o
		return nil
	}
	err := parseWith(e, withRun(setup, record), args...)
	return got, err
}

// setupFunc is a command's setup: it registers its flags and returns its
// run over the positional arguments.
type setupFunc[O any] = func(*env, *pflag.FlagSet, runFunc[O]) func(context.Context, []string) error

// parseWith runs main as agentctl runs a command (cobra parses the flags)
// and returns its error.
func parseWith(e *env, main func(*env, *pflag.FlagSet) func(context.Context, []string) error, args ...string) error {
	cmd := newCobraCommand(e, &command{name: "test", main: main})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetFlagErrorFunc(flagError)
	cmd.SetArgs(args)
	return cmd.ExecuteContext(context.Background())
}

// seamCase is one parse: args, and the options run must receive; a nil
// want means the parse must fail with an error containing wantErr.
type seamCase[O any] struct {
	args    []string
	want    *O
	wantErr string
}

func checkSeam[O any](t *testing.T, name string, main setupFunc[O], cases []seamCase[O]) {
	t.Helper()
	for _, c := range cases {
		got, err := parseOnly(main, c.args...)
		if c.want == nil {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s(%q) error = %v; want one containing %q", name, c.args, err, c.wantErr)
			}
			if got != nil {
				t.Errorf("%s(%q) ran with %+v; want no run after a bad parse", name, c.args, *got)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s(%q) error = %v; want nil", name, c.args, err)
			continue
		}
		if got == nil || !reflect.DeepEqual(*got, *c.want) {
			t.Errorf("%s(%q) ran with %+v; want %+v", name, c.args, got, *c.want)
		}
	}
}

// jf is the journal flags as parsed from --journal path with the default
// lock timeout.
func jf(path string) journalFlags { return journalFlags{location: path, lockTimeout: time.Second} }

func TestSeamLs(t *testing.T) {
	checkSeam(t, "ls", lsCmd, []seamCase[lsOptions]{
		{args: []string{"--journal", "j.db"}, want: &lsOptions{journal: jf("j.db"), limit: 100}},
		{args: []string{"--journal=j.db", "--session", "s-1", "--turn", "3", "--tool", "charge",
			"--tenant", "acme", "--state", "unknown", "--since", "2h", "--until", "2026-03-01T10:00:00Z",
			"--limit", "0", "--json", "--lock-timeout", "5s"},
			want: &lsOptions{
				journal: journalFlags{location: "j.db", lockTimeout: 5 * time.Second},
				filter: journal.Filter{Tenant: "acme", Session: "s-1", Turn: "3", Tool: "charge",
					State: journal.StateUnknown, Since: testNow.Add(-2 * time.Hour),
					Until: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)},
				state: "unknown", since: "2h", until: "2026-03-01T10:00:00Z", json: true,
			}},
		{args: []string{"--turn", "3"}, wantErr: "--turn needs --session"},
		{args: []string{"--limit", "-1"}, wantErr: "--limit -1"},
		{args: []string{"--state", "lost"}, wantErr: "--state"},
		{args: []string{"extra"}, wantErr: `unexpected argument "extra"`},
	})
}

func TestSeamShow(t *testing.T) {
	k := uuid.MustParse("0b9e4c2e-6a4f-5d7e-9f00-1a2b3c4d5e6f")
	checkSeam(t, "show", showCmd, []seamCase[showOptions]{
		{args: []string{k.String(), "--journal", "j.db", "--json"}, want: &showOptions{journal: jf("j.db"), key: keyArg{key: k}, json: true}},
		{args: []string{"0B9E4C2E", "--journal", "j.db"}, want: &showOptions{journal: jf("j.db"), key: keyArg{prefix: "0b9e4c2e"}}},
		{args: []string{"0b9e4c2e-6a4f"}, want: &showOptions{journal: jf(""), key: keyArg{prefix: "0b9e4c2e6a4f"}}},
		{args: []string{"not-a-key"}, wantErr: "is neither a key"},
		{args: []string{"0b9"}, wantErr: "first 4 or more hex digits"},
		{args: []string{"0b9e-4c2e"}, wantErr: "is neither a key"},
		{args: nil, wantErr: "want exactly one KEY, got 0"},
	})
}

func TestSeamStats(t *testing.T) {
	checkSeam(t, "stats", statsCmd, []seamCase[statsOptions]{
		{args: []string{"--json", "--journal", "postgres://h/db"}, want: &statsOptions{journal: jf("postgres://h/db"), json: true}},
		{args: []string{"x"}, wantErr: "stats takes only flags"},
	})
}

func TestSeamDerive(t *testing.T) {
	checkSeam(t, "derive", deriveCmd, []seamCase[deriveOptions]{
		{args: []string{"--tool", "charge", "--session", "s-42", "--turn", "3", "--tenant", "acme",
			"--discriminator", "d", `{"amount":"49.00"}`, "--namespace", testNS.String(), "--show-namespace",
			"--schema", "s.json", "--volatile", "a,b", "--step", "st", "--json"},
			want: &deriveOptions{
				journal: jf(""),
				intent:  keyderive.Intent{Tenant: "acme", Session: "s-42", Turn: "3", Tool: "charge", Discriminator: "d"},
				step:    "st", schema: "s.json", volatile: "a,b", namespace: testNS.String(),
				showNS: true, json: true, inputs: []string{`{"amount":"49.00"}`},
			}},
		{args: []string{"--diff", "{}", "-"}, want: &deriveOptions{journal: jf(""), diff: true, inputs: []string{"{}", "-"}}},
		{args: []string{"--diff", "-", "-"}, wantErr: "only one INPUT can be -"},
		{args: []string{"--diff", "{}"}, wantErr: "--diff wants two INPUTs, got 1"},
		{args: []string{"{}", "{}"}, wantErr: "want one INPUT"},
	})
}

func TestSeamReplay(t *testing.T) {
	checkSeam(t, "replay", replayCmd, []seamCase[replayOptions]{
		{args: []string{"--session", "s-42", "--tenant", "acme", "--at", "2026-03-01T10:00:00Z", "--json"},
			want: &replayOptions{journal: jf(""), session: "s-42", tenant: "acme", at: "2026-03-01T10:00:00Z", json: true}},
		{args: nil, wantErr: "--session is required"},
		{args: []string{"--session", "s", "--at", "yesterday"}, wantErr: `--at "yesterday"`},
	})
}

func TestSeamResolve(t *testing.T) {
	k := uuid.MustParse("0b9e4c2e-6a4f-5d7e-9f00-1a2b3c4d5e6f")
	checkSeam(t, "resolve", resolveCmd, []seamCase[resolveOptions]{
		{args: []string{k.String(), "--succeeded", "--output", `{"id":"ch_1"}`},
			want: &resolveOptions{journal: jf(""), key: keyArg{key: k}, succeeded: true, output: `{"id":"ch_1"}`, by: "alice@host1"}},
		{args: []string{k.String(), "--failed", "--reason", "card declined", "--by", "bob", "--force"},
			want: &resolveOptions{journal: jf(""), key: keyArg{key: k}, failed: true, reason: "card declined", by: "bob", force: true}},
		{args: []string{k.String(), "--succeeded", "--failed"}, wantErr: "exactly one of --succeeded or --failed"},
		{args: []string{k.String(), "--failed"}, wantErr: "--failed needs --reason"},
		{args: []string{k.String(), "--succeeded", "--output", "{"}, wantErr: "not valid JSON"},
	})
}

func TestSeamGC(t *testing.T) {
	checkSeam(t, "gc", gcCmd, []seamCase[gcOptions]{
		{args: []string{"--dry-run", "--json"}, want: &gcOptions{journal: jf(""), dryRun: true, json: true}},
		{args: []string{"now"}, wantErr: "gc takes only flags"},
	})
}

func TestSeamCompact(t *testing.T) {
	checkSeam(t, "compact", compactCmd, []seamCase[compactOptions]{
		{args: []string{"--output", "small.db", "--journal", "j.db"}, want: &compactOptions{journal: jf("j.db"), output: "small.db"}},
		{args: []string{"small.db"}, wantErr: "compact takes only flags"},
	})
}

func TestSeamExport(t *testing.T) {
	checkSeam(t, "export", exportCmd, []seamCase[exportOptions]{
		{args: []string{"--output", "backup.jsonl"}, want: &exportOptions{journal: jf(""), output: "backup.jsonl"}},
		{args: []string{"backup.jsonl"}, wantErr: "--output FILE"},
	})
}

func TestSeamImport(t *testing.T) {
	checkSeam(t, "import", importCmd, []seamCase[importOptions]{
		{args: nil, want: &importOptions{journal: jf(""), input: "-"}},
		{args: []string{"backup.jsonl", "--create"}, want: &importOptions{journal: jf(""), input: "backup.jsonl", create: true}},
		{args: []string{"a", "b"}, wantErr: "want at most one FILE, got 2"},
	})
}

func TestSeamVerify(t *testing.T) {
	checkSeam(t, "verify", verifyCmd, []seamCase[verifyOptions]{
		{args: []string{"--json"}, want: &verifyOptions{journal: jf(""), json: true}},
		{args: []string{"j.db"}, wantErr: "verify takes only flags"},
	})
}

func TestSeamTimeline(t *testing.T) {
	checkSeam(t, "timeline", timelineCmd, []seamCase[timelineOptions]{
		{args: []string{"--session", "demo", "--tenant", "acme", "--html", "t.html"},
			want: &timelineOptions{journal: jf(""), session: "demo", tenant: "acme", html: "t.html"}},
		{args: nil, wantErr: "--session is required"},
		{args: []string{"--session", "s", "--json", "--html", "x"}, wantErr: "exclusive"},
	})
}

func TestSeamApproveReject(t *testing.T) {
	k := uuid.MustParse("0b9e4c2e-6a4f-5d7e-9f00-1a2b3c4d5e6f")
	fp := keyderive.FingerprintOf([]byte(`{"amount":900}`))
	checkSeam(t, "approve", approveCmd, []seamCase[decideOptions]{
		{args: []string{k.String(), "--fingerprint", fp.String(), "--reason", "ok"},
			want: &decideOptions{journal: jf(""), key: keyArg{key: k}, approve: true, fingerprint: fp, reason: "ok", by: "alice@host1"}},
		{args: []string{k.String(), "--fingerprint", strings.ToUpper(fp.String()), "--by", "bob"},
			want: &decideOptions{journal: jf(""), key: keyArg{key: k}, approve: true, fingerprint: fp, by: "bob"}},
		{args: []string{k.String()}, wantErr: "approve needs --fingerprint HEX"},
		{args: []string{k.String(), "--fingerprint", fp.String() + "00"}, wantErr: "want the 64 hex digits"},
		{args: []string{"--fingerprint", fp.String()}, wantErr: "want exactly one KEY"},
	})
	checkSeam(t, "reject", rejectCmd, []seamCase[decideOptions]{
		{args: []string{k.String(), "--reason", "wrong account", "--by", "dan"},
			want: &decideOptions{journal: jf(""), key: keyArg{key: k}, reason: "wrong account", by: "dan"}},
		{args: []string{k.String()}, wantErr: "reject needs --reason"},
		{args: []string{k.String(), "--reason", "x", "--fingerprint", fp.String()}, wantErr: "unknown flag: --fingerprint"},
	})
}
