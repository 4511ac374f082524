// Package suggest finds the name a person most likely meant when the one
// they typed does not exist: a misspelt flag of agentctl or agentcheck.
//
// Closest accepts a name within two edits (one for a name of up to three
// letters, where two edits reach almost anything), or else the one name
// that the typed text begins. It never guesses between two prefixes.
package suggest
