package main

import (
	"reflect"
	"testing"
)

// TestTimelinePostgres draws the fixture from a PostgreSQL journal (moved
// there with export and import) and compares it with the bbolt one: the
// same rows, except that on PostgreSQL a live lease is an agent still
// running the intent (a running bar, and a re-issue waits), while a bbolt
// journal that agentctl could open has no live owner.
func TestTimelinePostgres(t *testing.T) {
	pg := pgJournal(t)
	path := buildTimelineJournal(t)
	if r := agentctl(t, false, "import", "--create", "--journal", pg, writeFile(t, exportOf(t, path))); r.code != 0 {
		t.Fatalf("import into PostgreSQL = %d, %s", r.code, r.stderr)
	}
	var fromBolt, fromPG timeline
	for _, c := range []struct {
		loc string
		tl  *timeline
	}{{path, &fromBolt}, {pg, &fromPG}} {
		r := timelineAt(t, false, "--journal", c.loc, "--session", "demo", "--json")
		if r.code != 0 {
			t.Fatalf("timeline --json on %s = %d, %s", c.loc, r.code, r.stderr)
		}
		if err := jsonUnmarshal(r.stdout, c.tl); err != nil {
			t.Fatal(err)
		}
	}
	checkTimelineRows(t, &fromBolt)
	if len(fromPG.Intents) != len(tlIntents) {
		t.Fatalf("PostgreSQL timeline has %d intents; want %d", len(fromPG.Intents), len(tlIntents))
	}
	last := len(tlIntents) - 1
	for i := range tlIntents {
		b, p := fromBolt.Intents[i], fromPG.Intents[i]
		if i == last {
			if p.Reissue != actWait || joinClasses(p.Attempts) != classRunning {
				t.Errorf("live lease on PostgreSQL: re-issue %s, classes %s; want %s, %s", p.Reissue, joinClasses(p.Attempts), actWait, classRunning)
			}
			continue
		}
		if !reflect.DeepEqual(b, p) {
			t.Errorf("row %d differs:\nbbolt      %+v\nPostgreSQL %+v", i+1, b, p)
		}
	}
	if !fromPG.To.Equal(tlNow) {
		t.Errorf("PostgreSQL timeline ends at %v; want now (%v), where the running attempt is", fromPG.To, tlNow)
	}
}
