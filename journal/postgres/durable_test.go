package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentonce/agentonce/journal/postgres"
)

// A session that commits before the WAL is flushed is refused, as the
// Redis store refuses appendfsync everysec: its acknowledged write-ahead
// could be lost, and an Unkeyed tool run twice. Every level that flushes
// is accepted, and so is off when the caller says it accepts the loss.
func TestOpenRefusesUnsyncedCommits(t *testing.T) {
	url, schema := pgURL(t), newSchema(t)
	ctx := context.Background()
	for _, tc := range []struct {
		level string
		allow bool
		want  error
	}{
		{"off", false, postgres.ErrNotDurable},
		{"off", true, nil},
		{"local", false, nil},
		{"remote_write", false, nil},
		{"on", false, nil},
		{"remote_apply", false, nil},
	} {
		s, err := postgres.Open(ctx, url+"&synchronous_commit="+tc.level,
			&postgres.Options{Schema: schema, AllowUnsyncedWrites: tc.allow})
		if !errors.Is(err, tc.want) {
			t.Errorf("Open with synchronous_commit=%s, AllowUnsyncedWrites %v = %v; want %v", tc.level, tc.allow, err, tc.want)
		}
		if err == nil {
			s.Close()
		}
	}
}
