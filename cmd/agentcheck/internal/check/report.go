package check

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// historiesShown is how many violations of each rule WriteText prints with
// their history unless verbose.
const historiesShown = 2

// WriteText writes r for a person: each violation (seed, rule, intent,
// what is wrong, and, for the first of each rule or all when verbose, the
// intent's history lines), then the summary table.
func (r *Report) WriteText(w io.Writer, verbose bool) {
	SortViolations(r.Violations)
	shown := map[string]int{}
	for _, v := range r.Violations {
		fmt.Fprintf(w, "violation: seed %d, store %s, rule %s, intent %s (%s, tool %s): %s\n",
			v.Seed, v.Store, v.Rule, v.Intent, v.Scenario, v.Tool, v.Detail)
		if shown[v.Rule] >= historiesShown && !verbose {
			continue
		}
		shown[v.Rule]++
		for _, e := range v.History {
			b, _ := json.Marshal(e)
			fmt.Fprintf(w, "    %s\n", b)
		}
	}
	for _, v := range r.Broken {
		fmt.Fprintf(w, "declaration broken: seed %d, store %s, intent %s (%s, tool %s): %s\n",
			v.Seed, v.Store, v.Intent, v.Scenario, v.Tool, v.Detail)
	}
	ds := ""
	if r.Downstream != "" {
		ds = ", downstream " + r.Downstream
	}
	fo := ""
	if r.Failovers > 0 {
		fo = fmt.Sprintf(", %d failovers", r.Failovers)
	}
	fmt.Fprintf(w, "store %s%s, seed %d: %d intents, %d calls, %d effects, %d kills, %d backends terminated%s\n",
		r.Store, ds, r.Seed, r.Intents, r.Calls, r.Effects, r.Kills, r.Terminations, fo)
	if r.History != "" {
		fmt.Fprintf(w, "history %s\n", r.History)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "rule\tviolations\tby scenario")
	for _, rule := range Rules {
		by := r.ByRule[rule]
		n := 0
		var parts []string
		for _, sc := range slices.Sorted(maps.Keys(by)) {
			n += by[sc]
			parts = append(parts, fmt.Sprintf("%s %d", sc, by[sc]))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", rule, n, strings.Join(parts, ", "))
	}
	fmt.Fprintf(tw, "%s (not a violation)\t%d\t\n", SoftKnowable, r.Soft[SoftKnowable])
	fmt.Fprintf(tw, "%s (the tool's declaration, not the harness)\t%d\t\n", RuleSettleBroken, len(r.Broken))
	tw.Flush()
	var answers []string
	for _, k := range slices.Sorted(maps.Keys(r.Answers)) {
		answers = append(answers, fmt.Sprintf("%s %d", k, r.Answers[k]))
	}
	fmt.Fprintf(w, "answers: %s\n", strings.Join(answers, ", "))
	if len(r.Decisions) > 0 {
		var decisions []string
		for _, k := range slices.Sorted(maps.Keys(r.Decisions)) {
			decisions = append(decisions, fmt.Sprintf("%s %d", k, r.Decisions[k]))
		}
		fmt.Fprintf(w, "approver's decisions: %s\n", strings.Join(decisions, ", "))
	}
	if r.ServerUnknowns != nil {
		fmt.Fprintln(w, r.ServerUnknowns)
	}
	if r.WorkDir != "" {
		fmt.Fprintf(w, "work directory kept: %s\n", r.WorkDir)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "problem: %s\n", p)
	}
	for _, l := range r.ServerLog {
		fmt.Fprintf(w, "middleware logged: %s\n", l)
	}
}

// Totals sums reports: intents, effects and violations.
func Totals(reports []*Report) (intents, effects, violations int) {
	for _, r := range reports {
		intents += r.Intents
		effects += r.Effects
		violations += len(r.Violations)
	}
	return
}

// SummaryLine is the last line of agentcheck's output.
func SummaryLine(reports []*Report) string {
	n, e, v := Totals(reports)
	return fmt.Sprintf("agentcheck: %d intents, %d effects, %d violations", n, e, v)
}

// JSONSummary is agentcheck -json's output: the totals and every report.
type JSONSummary struct {
	Seed       int64     `json:"seed"`
	Intents    int       `json:"intents"`
	Effects    int       `json:"effects"`
	Violations int       `json:"violations"`
	Reports    []*Report `json:"reports"`
}
