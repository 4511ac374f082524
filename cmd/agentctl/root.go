package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/agentonce/agentonce/internal/suggest"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// env is everything a command touches outside its arguments. main fills it
// from the process; tests fill it with buffers, a fixed clock and a fixed
// time zone.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	now    func() time.Time
	// loc is the zone for human output (time.Local in the process).
	loc *time.Location
	// stdoutTTY and stderrTTY choose human output and the progress bar;
	// stdinTTY stops import from waiting on a terminal for an export.
	stdoutTTY bool
	stderrTTY bool
	stdinTTY  bool
	// user is the default operator for resolve --by ($USER@hostname).
	user func() string
}

func osEnv() *env {
	return &env{
		stdin:     os.Stdin,
		stdout:    os.Stdout,
		stderr:    os.Stderr,
		getenv:    os.Getenv,
		now:       time.Now,
		loc:       time.Local,
		stdoutTTY: isTerminal(os.Stdout),
		stderrTTY: isTerminal(os.Stderr),
		stdinTTY:  isTerminal(os.Stdin),
		user:      defaultUser,
	}
}

// isTerminal reports whether f is a character device (a terminal), without
// a dependency on x/term.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func defaultUser() string {
	u := os.Getenv("USER")
	if u == "" {
		u = "unknown"
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return u
	}
	return u + "@" + h
}

// command is one agentctl verb: a cobra command whose flags its setup
// registers and whose run it returns; see the files named after each verb.
type command struct {
	name    string
	args    string // synopsis after the name, e.g. "KEY [flags]"
	summary string // one line for "agentctl help"
	long    string // the rest of "agentctl help NAME"
	// main registers the command's flags on fs, bound to a fresh options
	// struct, and returns what runs it once the flags are parsed, with the
	// positional arguments.
	main func(e *env, fs *pflag.FlagSet) func(ctx context.Context, args []string) error
}

// runFunc runs one command with its parsed options. Each command's setup
// checks the parsed flags and arguments into its options and calls the
// runFunc it is given, so that a test can check the parsing with a
// recording runFunc and never open a journal (gh's NewCmdX(f, runF)).
type runFunc[O any] func(ctx context.Context, e *env, o *O) error

// withRun makes a command's main from its setup and its run function.
func withRun[O any](setup func(*env, *pflag.FlagSet, runFunc[O]) func(context.Context, []string) error, run runFunc[O]) func(*env, *pflag.FlagSet) func(context.Context, []string) error {
	return func(e *env, fs *pflag.FlagSet) func(context.Context, []string) error {
		return setup(e, fs, run)
	}
}

// commands lists every command (each defined in its own file) in the order
// help lists them.
func commands() []*command {
	return []*command{
		lsCommand, showCommand, statsCommand, deriveCommand, replayCommand,
		resolveCommand, approveCommand, rejectCommand, queueCommand, gcCommand, compactCommand, exportCommand, importCommand, tailCommand,
		verifyCommand, timelineCommand, completionCommand(),
	}
}

func lookup(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// run executes one agentctl invocation and returns its exit code.
func run(ctx context.Context, e *env, args []string) int {
	args = journalFlagFirst(args)
	if len(args) == 0 {
		fmt.Fprint(e.stderr, topUsage())
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		return runHelp(e, rest)
	}
	root := newRoot(e)
	if c := lookup(name); c == nil && name != cobra.ShellCompRequestCmd && name != cobra.ShellCompNoDescRequestCmd {
		fmt.Fprintln(e.stderr, errorLine("", unknownCommand(root, name)))
		return exitUsage
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil {
		var ce *cliError
		if !errors.As(err, &ce) || !ce.quiet {
			fmt.Fprintln(e.stderr, errorLine(cmd.Name(), err))
		}
		return exitCodeOf(err)
	}
	return exitOK
}

// unknownCommand is the usage error for a name that is no command, with
// the closest ones (cobra's suggestions: edit distance 2, or a prefix).
func unknownCommand(root *cobra.Command, name string) error {
	if strings.HasPrefix(name, "-") {
		return usageErrorf("%s before the command: only --journal may come first; run 'agentctl help'", name)
	}
	if sug := root.SuggestionsFor(name); len(sug) > 0 {
		return usageErrorf("unknown command %q; did you mean %s? (run 'agentctl help' for the list)", name, strings.Join(sug, " or "))
	}
	return usageErrorf("unknown command %q; run 'agentctl help' for the list", name)
}

// newRoot builds the cobra tree: one command per entry of commands(), each
// with its flags, help, completion and run. Flags may follow arguments;
// "--" ends them.
func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:           "agentctl",
		Short:         "inspect, replay and maintain agentonce journals",
		SilenceErrors: true,
		SilenceUsage:  true,
		// "agentctl help" and unknown commands are answered before
		// cobra runs; its own help command would only duplicate them.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		// Cobra's own default, set where it would read it (Find sets it
		// only on the way to an error message of its own).
		SuggestionsMinimumDistance: 2,
	}
	root.SetHelpCommand(&cobra.Command{Hidden: true})
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetFlagErrorFunc(flagError)
	for _, c := range commands() {
		root.AddCommand(newCobraCommand(e, c))
	}
	return root
}

func newCobraCommand(e *env, c *command) *cobra.Command {
	cmd := &cobra.Command{
		Use:               c.name + " " + c.args,
		Short:             c.summary,
		Args:              cobra.ArbitraryArgs, // each command checks its own
		ValidArgsFunction: completeArgs(e, c.name),
	}
	exec := c.main(e, cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return exec(cmd.Context(), args)
	}
	cmd.SetHelpFunc(func(cmd *cobra.Command, _ []string) {
		fmt.Fprint(e.stdout, commandUsage(c, cmd.Flags()))
	})
	registerFlagCompletion(e, cmd)
	return cmd
}

// flagError makes a flag parse error a usage error, with the closest flag
// the command has when the flag is unknown.
func flagError(cmd *cobra.Command, err error) error {
	var ne *pflag.NotExistError
	if errors.As(err, &ne) {
		if sug := closestFlag(cmd.Flags(), ne.GetSpecifiedName()); sug != "" {
			return usageErrorf("%v; did you mean --%s? (run 'agentctl help %s')", err, sug, cmd.Name())
		}
	}
	return usageErrorf("%v; run 'agentctl help %s'", err, cmd.Name())
}

// closestFlag is the flag of fs that name most likely meant
// (suggest.Closest), or "".
func closestFlag(fs *pflag.FlagSet, name string) string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" {
			names = append(names, f.Name)
		}
	})
	return suggest.Closest(name, names)
}

// journalFlagFirst moves a --journal flag written before the command
// ("agentctl --journal J ls") to after it, where the command parses it. A
// single-dash -journal (the standard flag package's spelling, which
// agentctl took before it moved to cobra) is written --journal.
func journalFlagFirst(args []string) []string {
	var global []string
	for len(args) > 0 {
		a := args[0]
		switch {
		case (a == "--journal" || a == "-journal") && len(args) > 1:
			global, args = append(global, "--journal", args[1]), args[2:]
		case strings.HasPrefix(a, "--journal=") || strings.HasPrefix(a, "-journal="):
			global, args = append(global, "--"+strings.TrimLeft(a, "-")), args[1:]
		default:
			if len(global) == 0 || len(args) == 0 {
				return args
			}
			return append(append([]string{args[0]}, global...), args[1:]...)
		}
	}
	return global // no command: the usage error names what is missing
}

// journalFlags are on every command.
type journalFlags struct {
	location    string
	lockTimeout time.Duration
}

func (j *journalFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&j.location, "journal", "", "the journal: a bbolt file `PATH` or a postgres:// URL (default $AGENTONCE_JOURNAL)")
	fs.DurationVar(&j.lockTimeout, "lock-timeout", time.Second, "how long to wait for another process's lock on the journal")
}

// resolve fills the location from $AGENTONCE_JOURNAL when the flag is unset.
func (j *journalFlags) resolve(e *env) error {
	if j.location == "" {
		j.location = e.getenv("AGENTONCE_JOURNAL")
	}
	if j.location == "" {
		return usageErrorf("no journal given: pass --journal PATH or set AGENTONCE_JOURNAL")
	}
	return nil
}

func topUsage() string {
	var b strings.Builder
	b.WriteString(`agentctl inspects, replays and maintains agentonce journals.

Usage:
  agentctl COMMAND [flags] [args]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-10s  %s\n", c.name, c.summary)
	}
	b.WriteString(`
Every command takes the journal as --journal LOCATION or $AGENTONCE_JOURNAL:
a bbolt file path, or a postgres:// URL (?schema=NAME, default agentonce).
Flags may come before or after arguments; "--" ends the flags.
On a terminal, reads print a table in local time; otherwise tab-separated
lines with RFC 3339 UTC times; --json prints the documented JSON schema.

Examples:
  export AGENTONCE_JOURNAL=./agent-journal.db
  agentctl ls --session s-42                 what the agent did in one session
  agentctl show KEY                          one intent, its attempts and lease
  agentctl replay --session s-42             what a restart would do
  agentctl derive --tool charge --session s-42 --turn 3 '{"amount":"49.00"}'
  agentctl queue                             what needs a person, oldest first
  agentctl resolve KEY --succeeded --output '{"id":"ch_1"}'
  agentctl export --output backup.jsonl

More help:
  agentctl help COMMAND      flags and details of one command
  agentctl help exit-codes   what each exit code means
  agentctl help json         the JSON schema of --json, export and import
`)
	return b.String()
}

func commandUsage(c *command, fs *pflag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nUsage:\n  agentctl %s %s\n", c.summary, c.name, c.args)
	if c.long != "" {
		b.WriteString("\n" + strings.TrimRight(c.long, "\n") + "\n")
	}
	type row struct{ name, text string }
	var rows []row
	width := 0
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" { // cobra's own, on every command
			return
		}
		typ, usage := pflag.UnquoteUsage(f)
		typ = strings.ToUpper(typ) // "duration" → "DURATION", like the named ones
		name := "--" + f.Name
		if typ != "" {
			name += " " + typ
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			usage += " (default " + f.DefValue + ")"
		}
		rows = append(rows, row{name, usage})
		width = max(width, len(name))
	})
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	if len(rows) > 0 {
		b.WriteString("\nFlags:\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "  %-*s  %s\n", width, r.name, r.text)
		}
	}
	return b.String()
}

func runHelp(e *env, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(e.stdout, topUsage())
		return exitOK
	}
	switch args[0] {
	case "exit-codes":
		fmt.Fprint(e.stdout, exitCodeTable())
		return exitOK
	case "json":
		fmt.Fprint(e.stdout, jsonSchemaHelp)
		return exitOK
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintln(e.stderr, errorLine("help", fmt.Errorf("no help for %q; run 'agentctl help' for the list", args[0])))
		return exitUsage
	}
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	c.main(e, fs)
	fmt.Fprint(e.stdout, commandUsage(c, fs))
	return exitOK
}

// exitCodeTable is the Markdown table shown by "agentctl help exit-codes"
// and copied into README.md.
func exitCodeTable() string {
	var b strings.Builder
	b.WriteString("| code | meaning |\n| --- | --- |\n")
	for _, c := range exitCodes {
		fmt.Fprintf(&b, "| %d | %s |\n", c.Code, c.Meaning)
	}
	return b.String()
}
