package main

import (
	"fmt"
	"io"
)

// printTable prints the rows as RELIABILITY.md's table, then what each
// plain runtime's resume was and any schedule that did not end charged.
func printTable(w io.Writer, rows []row) {
	fmt.Fprintln(w, "| runtime | plain maxFired | with agentonce maxFired | left to an operator (with agentonce) | schedules (plain / with agentonce) | crash points of a clean run (plain / with agentonce) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, r := range rows {
		if r.skipped != "" {
			fmt.Fprintf(w, "| %s | skipped: %s | | | | |\n", r.name, r.skipped)
			continue
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d / %d | %d / %d |\n", r.name, r.plain.max, r.once.max, r.once.person,
			r.plain.schedules, r.once.schedules, r.plain.points, r.once.points)
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		if r.skipped != "" {
			continue
		}
		once := "one charge in every schedule"
		if r.once.max > 1 {
			once = fmt.Sprintf("%d charges after %s", r.once.max, r.once.worst)
		}
		fmt.Fprintf(w, "%s: plain is %s. Plain, %d charges after %s; with agentonce, %s.\n", r.name, r.how, r.plain.max, r.plain.worst, once)
		if r.once.person > 0 {
			fmt.Fprintf(w, "  left to an operator, as first: %s\n", r.once.personDetail)
		}
		for _, f := range append(r.plain.failures, r.once.failures...) {
			fmt.Fprintf(w, "  not charged: %s\n", f)
		}
	}
}
