package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
)

// notFoundHint is what to do when a key has no record.
const notFoundHint = "check the key and --journal (agentctl ls lists keys); an expired record may have been removed by gc"

// record returns the record the KEY argument names in s (keyArg.find);
// no record is exit 6.
func (a keyArg) record(ctx context.Context, s journal.Store) (journal.Record, error) {
	key, err := a.find(ctx, s)
	if err != nil {
		return journal.Record{}, err
	}
	return loadRecord(ctx, s, key)
}

// loadRecord returns the record of key in s; no record is exit 6.
func loadRecord(ctx context.Context, s journal.Store, key uuid.UUID) (journal.Record, error) {
	r, err := s.Get(ctx, key)
	if isNotFound(err) {
		// The store's error says the same with less context, so it is
		// not repeated.
		return r, &cliError{code: exitNotFound, err: fmt.Errorf("no record for key %s in this journal", key),
			hint: notFoundHint}
	}
	return r, err
}

// sessionRecords returns the records of a session (of tenant, when set)
// in the order the agent made the calls, oldest first.
func sessionRecords(ctx context.Context, s journal.Store, session, tenant string) ([]journal.Record, error) {
	var recs []journal.Record
	for r, err := range s.List(ctx, journal.Filter{Session: session, Tenant: tenant}) {
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	// List is newest first.
	slices.Reverse(recs)
	return recs, nil
}
