package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentonce/agentonce/journal"
)

// completionCommand is made by a function, not a variable like the other
// commands: it builds the whole tree, commands() included.
func completionCommand() *command {
	return &command{
		name:    "completion",
		args:    "bash|zsh|fish",
		summary: "print a shell completion script: commands, flags, sessions, tools and keys",
		long: `Prints the completion script for bash, zsh or fish. It completes commands,
their flags, the values of --session, --tool, --tenant and --state, and
the KEY of show and resolve, from the journal named by --journal or
$AGENTONCE_JOURNAL (its newest ` + fmt.Sprint(completionScan) + ` records; a running agent's through its
socket). Load it with:

  bash:  source <(agentctl completion bash)
  zsh:   agentctl completion zsh > "${fpath[1]}/_agentctl"
  fish:  agentctl completion fish | source`,
		main: withRun(completionCmd, runCompletion),
	}
}

type completionOptions struct {
	shell string
}

func completionCmd(e *env, fs *pflag.FlagSet, run runFunc[completionOptions]) func(context.Context, []string) error {
	var o completionOptions
	return func(ctx context.Context, pos []string) error {
		if len(pos) != 1 || !slices.Contains([]string{"bash", "zsh", "fish"}, pos[0]) {
			return usageErrorf("want one shell: bash, zsh or fish")
		}
		o.shell = pos[0]
		return run(ctx, e, &o)
	}
}

func runCompletion(_ context.Context, e *env, o *completionOptions) error {
	root := newRoot(e)
	switch o.shell {
	case "bash":
		return root.GenBashCompletionV2(e.stdout, true)
	case "zsh":
		return root.GenZshCompletion(e.stdout)
	default:
		return root.GenFishCompletion(e.stdout, true)
	}
}

// completionScan bounds the records a completion reads: the newest ones,
// which are the ones a person is looking at.
const completionScan = 1000

// completionTimeout bounds how long a completion waits for the journal (a
// lock held by another process, an unreachable server).
const completionTimeout = 2 * time.Second

// completeArgs completes a command's positional arguments: keys for show
// and the commands that decide, files for import, nothing for the rest.
func completeArgs(e *env, name string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		switch name {
		case "show", "resolve", "approve", "reject":
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return journalValues(e, cmd, toComplete, func(r *journal.Record) (string, string) {
				return r.Key.String(), r.Intent.Tool + " " + r.Intent.Session + " " + r.State.String()
			}), cobra.ShellCompDirectiveNoFileComp
		case "import", "completion":
			if name == "completion" {
				return []cobra.Completion{"bash", "fish", "zsh"}, cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveDefault
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// registerFlagCompletion completes the values of the flags that name what
// a journal holds.
func registerFlagCompletion(e *env, cmd *cobra.Command) {
	field := map[string]func(*journal.Record) string{
		"session": func(r *journal.Record) string { return r.Intent.Session },
		"tool":    func(r *journal.Record) string { return r.Intent.Tool },
		"tenant":  func(r *journal.Record) string { return r.Intent.Tenant },
	}
	for name, get := range field {
		if cmd.Flags().Lookup(name) == nil {
			continue
		}
		_ = cmd.RegisterFlagCompletionFunc(name, func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return journalValues(e, cmd, toComplete, func(r *journal.Record) (string, string) { return get(r), "" }), cobra.ShellCompDirectiveNoFileComp
		})
	}
	if cmd.Flags().Lookup("state") != nil {
		_ = cmd.RegisterFlagCompletionFunc("state", func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var out []cobra.Completion
			for _, st := range []string{"pending", "succeeded", "failed", "suppressed", "unknown"} {
				if strings.HasPrefix(st, toComplete) {
					out = append(out, st)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		})
	}
}

// journalValues lists the distinct values value gives for the journal's
// newest records that start with toComplete, in the order first seen,
// each with its description when it has one. Any failure (no journal, a
// lock) completes nothing: a completion must never print an error.
func journalValues(e *env, cmd *cobra.Command, toComplete string, value func(*journal.Record) (string, string)) []cobra.Completion {
	j := journalFlags{lockTimeout: 100 * time.Millisecond}
	if f := cmd.Flags().Lookup("journal"); f != nil {
		j.location = f.Value.String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	s, err := j.open(ctx, e, true)
	if err != nil {
		return nil
	}
	defer s.Close()
	seen := map[string]bool{}
	var out []cobra.Completion
	for r, err := range s.List(ctx, journal.Filter{Limit: completionScan}) {
		if err != nil {
			break
		}
		v, desc := value(&r)
		if v == "" || seen[v] || !strings.HasPrefix(v, toComplete) {
			continue
		}
		seen[v] = true
		out = append(out, cobra.CompletionWithDesc(v, strings.TrimSpace(desc)))
	}
	return out
}
