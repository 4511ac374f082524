package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/postgres"
	redisjournal "github.com/agentonce/agentonce/journal/redis"
)

// isRemote reports whether location names a journal on a server
// (PostgreSQL, Redis), not a bbolt file: one with no file, no lock and no
// agent socket, that other processes may write while a command runs.
func isRemote(location string) bool { return postgres.IsURL(location) || isRedisURL(location) }

// isRedisURL reports whether location names a Redis or Valkey journal,
// on one server or a cluster.
func isRedisURL(location string) bool {
	scheme, _, ok := strings.Cut(strings.ToLower(location), "://")
	scheme = strings.TrimSuffix(scheme, "+cluster")
	return ok && (scheme == "redis" || scheme == "rediss")
}

// openRedis opens the Redis journal at location (its prefix parameter
// names the journal); unless create is set, the journal must exist
// (openExisting).
func openRedis(ctx context.Context, location string, opts *journal.Options, create bool) (journal.Store, error) {
	open := func(o *journal.Options) (journal.Store, error) {
		s, err := redisjournal.Open(ctx, location, &redisjournal.Options{Journal: *cmp.Or(o, new(journal.Options))})
		switch {
		case errors.Is(err, journal.ErrNoJournal):
			return nil, &cliError{code: exitNoJournal, err: err,
				hint: "check the URL and its prefix parameter (agentctl never creates a journal, except import --create)"}
		case errors.Is(err, redisjournal.ErrNotDurable):
			return nil, &cliError{code: exitUsage, err: err,
				hint: "start the server with --appendonly yes --appendfsync always; on a cluster with replicas, add replicas=1 to the URL"}
		case err != nil:
			return nil, fmt.Errorf("cannot reach the Redis journal: %w", err)
		}
		return s, nil
	}
	return openExisting(open, opts, create)
}
