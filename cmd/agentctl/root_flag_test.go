package main

import (
	"slices"
	"testing"
)

func TestJournalFlagFirst(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"--journal", "j.db", "ls", "--session", "s"}, []string{"ls", "--journal", "j.db", "--session", "s"}},
		{[]string{"--journal=j.db", "show", "K"}, []string{"show", "--journal=j.db", "K"}},
		{[]string{"-journal", "j.db", "stats"}, []string{"stats", "--journal", "j.db"}},
		{[]string{"-journal=j.db", "stats"}, []string{"stats", "--journal=j.db"}},
		{[]string{"ls", "--journal", "j.db"}, []string{"ls", "--journal", "j.db"}},
		{[]string{"help"}, []string{"help"}},
	} {
		if got := journalFlagFirst(slices.Clone(tc.in)); !slices.Equal(got, tc.want) {
			t.Errorf("journalFlagFirst(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
