// Package machine is the journal's one state machine, which every store
// calls: pure functions from (current record, request, now) to the record
// to write and the answer to give. A store supplies atomicity (a lock, a
// transaction), persistence and the clock; it decides nothing itself.
//
// A store validates a request before it reads anything (ValidateBegin,
// ValidateRenew, …), reads the current record under its lock or in its
// transaction, asks DecideBegin or Apply* what to write, and writes it in
// the same atomic step. MatchFilter, NewerFirst, NewStats and AddStats make
// every store's List and Stats agree.
//
// It is internal to journal: a user of a Store needs none of it, and only
// the store packages under journal import it.
package machine
