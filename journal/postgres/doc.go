// Package postgres is a journal.Store on PostgreSQL, for fleets of agent
// processes on many hosts that share one journal.
package postgres
