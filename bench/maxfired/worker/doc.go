// Package worker is the subprocess side of bench/maxfired: one invocation
// of one runtime that charges one intent and prints its outcome as a JSON
// line, unless it is killed first. Every durable write it makes (its
// journal's, its framework's checkpoints) and the effect itself are
// numbered crash points; at the one named by -crash it SIGKILLs itself.
// It is a module of its own, on the core alone, so that a runtime whose
// SDK cannot share bench/maxfired's build list (genkit) has a worker too.
package worker
