package check

import (
	"os"
	"path/filepath"
	"testing"
)

func TestHistoryRoundTrip(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	la, err := OpenLog(a, "w0.1")
	if err != nil {
		t.Fatal(err)
	}
	lb, err := OpenLog(b, "downstream")
	if err != nil {
		t.Fatal(err)
	}
	la.Add(Event{T: 30, Ev: EvAnswer, Intent: "i1", Call: "c1", Outcome: OutSucceeded})
	lb.Add(Event{T: 20, Ev: EvEffect, Intent: "i1", Effect: 1})
	la.Add(Event{T: 10, Ev: EvCall, Intent: "i1", Call: "c1"})
	la.Close()
	lb.Close()
	// A worker killed mid-write leaves a cut-off last line.
	f, err := os.OpenFile(a, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"t":40,"ev":"cal`)
	f.Close()

	events, err := ReadHistory(a, b)
	if err != nil {
		t.Fatalf("ReadHistory = %v", err)
	}
	var got []int64
	for _, e := range events {
		got = append(got, e.T)
	}
	if len(got) != 3 || got[0] != 10 || got[1] != 20 || got[2] != 30 {
		t.Fatalf("ReadHistory times = %v; want [10 20 30]", got)
	}
	if events[0].Proc != "w0.1" || events[1].Proc != "downstream" {
		t.Errorf("ReadHistory procs = %q, %q; want w0.1, downstream", events[0].Proc, events[1].Proc)
	}

	merged := filepath.Join(dir, "merged.jsonl")
	if err := WriteHistory(merged, events); err != nil {
		t.Fatal(err)
	}
	again, err := ReadHistory(merged)
	if err != nil || len(again) != 3 {
		t.Errorf("ReadHistory(WriteHistory(...)) = %d events, %v; want 3, nil", len(again), err)
	}

	// A process killed mid-write, then the next one appending: the cut
	// line is skipped, the next one's lines are whole.
	if err := os.WriteFile(b, []byte("{\"t\":1}\n{\"t\":2,\"ev\":\"req"), 0o600); err != nil {
		t.Fatal(err)
	}
	lb, err = OpenLog(b, "downstream")
	if err != nil {
		t.Fatal(err)
	}
	lb.Add(Event{T: 3, Ev: EvEffect})
	lb.Close()
	if events, err := ReadHistory(b); err != nil || len(events) != 2 || events[1].T != 3 {
		t.Errorf("ReadHistory after a cut line and a reopen = %+v, %v; want the events at 1 and 3", events, err)
	}

	if err := os.WriteFile(b, []byte("{\"t\":1}\n{\"t\":\"x\"}\n{\"t\":2}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadHistory(b); err == nil {
		t.Errorf("ReadHistory of a file with a bad middle line = nil error; want one")
	}
}
