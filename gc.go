package agentonce

import (
	"context"
	"time"
)

// BatchGC is a store that removes expired records in bounded batches.
type BatchGC interface {
	GCBatch(ctx context.Context, max int) (int, error)
}

// DefaultGCEvery is OpenOptions.GCEvery's default.
const DefaultGCEvery = time.Hour

// gcBatch is how many records one background batch removes.
const gcBatch = 64

// collect sweeps expired records every interval, in paced batches.
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
