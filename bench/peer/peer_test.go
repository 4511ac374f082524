package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestRunSmoke runs one tiny repetition of every system against the server
// AGENTONCE_PG_URL names, in the URL's own database and in schemas of its
// own, so that it shares nothing with the other tests on that server.
// Without the variable it skips. It checks the run completes and reports
// every system; the figures of so few steps mean nothing.
func TestRunSmoke(t *testing.T) {
	url := os.Getenv("AGENTONCE_PG_URL")
	if url == "" {
		t.Skip("AGENTONCE_PG_URL is not set: the peer benchmark needs a PostgreSQL server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cfg := config{url: url, reps: 1, steps: 4, workers: 2, settle: time.Millisecond}
	if err := run(ctx, cfg, &out); err != nil {
		t.Fatalf("run = %v\n%s", err, out.String())
	}
	for _, sys := range systems {
		if !strings.Contains(out.String(), sys.name) {
			t.Errorf("the table names no %s:\n%s", sys.name, out.String())
		}
	}
}

// TestBackendCPU reads the CPU time of another session of the database:
// it is there, and positive. Where the server runs on another host (its
// /proc is not this one's) it skips.
func TestBackendCPU(t *testing.T) {
	url := os.Getenv("AGENTONCE_PG_URL")
	if url == "" {
		t.Skip("AGENTONCE_PG_URL is not set: the peer benchmark needs a PostgreSQL server")
	}
	ctx := context.Background()
	mon, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close(ctx)
	other, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	var pid int32
	if err := other.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	cpu, err := backendCPU(ctx, mon)
	if err != nil {
		t.Skipf("backendCPU = %v (the server is not on this host?)", err)
	}
	if cpu[pid] <= 0 {
		t.Fatalf("backendCPU = %v; want the other session's pid %d with its CPU time", cpu, pid)
	}
}
