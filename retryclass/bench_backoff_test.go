package retryclass_test

import "github.com/cenkalti/backoff/v4"

func newBackoff() backoff.BackOff {
	return backoff.WithMaxRetries(backoff.NewExponentialBackOff(), 2)
}
