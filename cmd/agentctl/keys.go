package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
)

// minKeyPrefix is the shortest key prefix agentctl accepts: shorter ones
// match too much to be what anyone meant.
const minKeyPrefix = 4

// maxCandidates bounds the keys an ambiguous prefix lists.
const maxCandidates = 10

// keyArg is a KEY argument: a full key, or a prefix of one as agentctl
// prints it (the timeline shows the first 8 hex digits).
type keyArg struct {
	key uuid.UUID
	// prefix is set, lower case and without dashes, when the argument
	// is not a whole key; key is then zero until find resolves it.
	prefix string
}

// parseKeyArg reads a KEY argument: a UUID, or at least minKeyPrefix hex
// digits that begin one (dashes where the key has them, or none).
func parseKeyArg(s string) (keyArg, error) {
	if k, err := uuid.Parse(s); err == nil {
		return keyArg{key: k}, nil
	}
	p := strings.ToLower(strings.ReplaceAll(s, "-", ""))
	if len(p) < minKeyPrefix || len(p) >= 32 || strings.Trim(p, "0123456789abcdef") != "" || !dashesFit(s) {
		return keyArg{}, usageErrorf("key %q is neither a key (a UUID) nor its first %d or more hex digits; agentctl ls lists keys", s, minKeyPrefix)
	}
	return keyArg{prefix: p}, nil
}

// dashesFit reports whether the dashes in a prefix stand where a UUID's
// do (after hex digits 8, 12, 16 and 20), or there are none.
func dashesFit(s string) bool {
	if !strings.Contains(s, "-") {
		return true
	}
	const form = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
	if len(s) > len(form) {
		return false
	}
	for i := range len(s) {
		if (s[i] == '-') != (form[i] == '-') {
			return false
		}
	}
	return true
}

// find returns the key the argument names in s: the key itself, or the
// one key of s that starts with the prefix. A prefix reads every record
// (the store has no lookup by part of a key); none is exit 6, two or more
// a usage error (exit 2) listing them.
func (a keyArg) find(ctx context.Context, s journal.Store) (uuid.UUID, error) {
	if a.prefix == "" {
		return a.key, nil
	}
	var found []uuid.UUID
	for r, err := range s.List(ctx, journal.Filter{}) {
		if err != nil {
			return uuid.Nil, err
		}
		if strings.HasPrefix(strings.ReplaceAll(r.Key.String(), "-", ""), a.prefix) {
			found = append(found, r.Key)
			if len(found) > maxCandidates {
				break
			}
		}
	}
	switch len(found) {
	case 0:
		return uuid.Nil, &cliError{code: exitNotFound, err: fmt.Errorf("no key in this journal starts with %s", a.prefix),
			hint: notFoundHint}
	case 1:
		return found[0], nil
	}
	slices.SortFunc(found, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
	list := make([]string, 0, maxCandidates)
	for i, k := range found {
		if i == maxCandidates {
			list = append(list, "…")
			break
		}
		list = append(list, k.String())
	}
	return uuid.Nil, usageErrorf("key prefix %s is ambiguous: it starts %s; give more of the key", a.prefix, strings.Join(list, ", "))
}

// String is the argument as agentctl would print it.
func (a keyArg) String() string {
	if a.prefix != "" {
		return a.prefix
	}
	return a.key.String()
}
