package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.url, "url", os.Getenv("AGENTONCE_PG_URL"), "the PostgreSQL server (default $AGENTONCE_PG_URL)")
	flag.StringVar(&cfg.database, "database", "agentonce_peer", "the database to write in, created when missing; empty means the URL's")
	flag.IntVar(&cfg.reps, "reps", 5, "repetitions; each runs every system once, sequentially and concurrently")
	flag.IntVar(&cfg.steps, "steps", 2000, "steps per system, mode and repetition")
	flag.IntVar(&cfg.workers, "workers", 16, "concurrent workers in the concurrent mode")
	flag.StringVar(&cfg.only, "only", "", "comma-separated systems to run (default all: "+systemNames()+")")
	flag.StringVar(&cfg.walDir, "waldir", "", "the server's pg_wal directory: count each segment's own WAL with pg_waldump (needs read access)")
	flag.StringVar(&cfg.waldump, "waldump", "pg_waldump", "the pg_waldump program, for -waldir")
	flag.BoolVar(&cfg.serverCPU, "servercpu", false, "read each segment's server CPU time from /proc/<pid>/schedstat (the server must run on this host)")
	flag.IntVar(&cfg.warmup, "warmup", warmupPerWorker, "warm-up steps per worker before each system's segments")
	flag.Parse()
	if cfg.url == "" {
		fmt.Fprintln(os.Stderr, "peer: no server: set AGENTONCE_PG_URL or pass -url")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		os.Exit(1)
	}
}
