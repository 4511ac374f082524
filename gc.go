package agentonce

import (
	"context"
	"time"
)

// BatchGC is a store that removes expired records in bounded batches
// (the bbolt store): a Harness that Open opened can then collect them in
// the background without holding up calls (OpenOptions.GCEvery).
type BatchGC interface {
	GCBatch(ctx context.Context, max int) (int, error)
}

// DefaultGCEvery is OpenOptions.GCEvery's default: how often a Harness that
// Open opened sweeps its journal's expired records.
const DefaultGCEvery = time.Hour

// gcBatch is how many records one background batch removes: small, so that
// a call waiting behind it waits little.
const gcBatch = 64

// collect sweeps expired records every interval until ctx ends: batches
// of gcBatch, each followed by a pause as long as it took, so that the
// sweep takes at most half of the journal's write time; a sweep ends with
// a batch that found less than a full batch to remove. Errors end the
// sweep, not the loop: the next interval tries again.
func collect(ctx context.Context, gc BatchGC, interval time.Duration) {
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for {
			start := time.Now()
			n, err := gc.GCBatch(ctx, gcBatch)
			if err != nil || n < gcBatch {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Since(start)):
			}
		}
		t.Reset(interval)
	}
}
