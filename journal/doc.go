// Package journal is the durable record of every intent an agent began:
// its key, fingerprint, attempts, lease and outcome.
package journal
