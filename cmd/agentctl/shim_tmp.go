package main

// TEMPORARY until journal.Compact land.

import (
	"context"
	"errors"
)

var compactJournal = func(ctx context.Context, src, dst string, progress func(done, total int64)) error {
	return errors.New("compact not available yet")
}
