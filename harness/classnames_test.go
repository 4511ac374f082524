package harness_test

import (
	"testing"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// journal spells the class names it reads and writes itself, as it may not
// import retryclass (docs/design.md); they must be retryclass's.
func TestJournalClassNamesAreRetryclass(t *testing.T) {
	for _, c := range []struct {
		journal string
		class   retryclass.Class
	}{
		{journal.ClassNotExecuted, retryclass.NotExecuted},
		{journal.ClassInFlight, retryclass.InFlight},
		{journal.ClassMismatch, retryclass.Mismatch},
	} {
		if c.journal != c.class.String() {
			t.Errorf("journal's name for %v = %q; want %q", c.class, c.journal, c.class.String())
		}
	}
	if _, err := retryclass.ParseClass(journal.ClassResolved); err == nil {
		t.Errorf("ParseClass(%q) succeeded; want an operator's class apart from every retry class", journal.ClassResolved)
	}
}
