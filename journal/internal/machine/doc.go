// Package machine is the journal's one state machine, which every store
// calls: pure functions from (current record, request, now) to the record
// to write and the answer to give. A store supplies atomicity,
// persistence and the clock, and decides nothing itself: it validates a
// request (Validate*), reads the current record, asks DecideBegin or
// Apply* what to write, and writes it in the same atomic step.
package machine
