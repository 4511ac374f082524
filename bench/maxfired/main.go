package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentonce/agentonce/bench/maxfired/worker"
)

func main() {
	ordered()
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		worker.Main(os.Args[2:], runtimes)
		return
	}
	var c config
	flag.IntVar(&c.random, "random", 6, "random schedules per runtime and mode")
	flag.IntVar(&c.crashes, "crashes", 3, "most crashes in a random schedule, and the crashes at the effect in a row")
	flag.BoolVar(&c.pairs, "pairs", true, "also crash at each point of the run that resumes each single crash")
	flag.Int64Var(&c.seed, "seed", 1, "seed of the random schedules")
	flag.IntVar(&c.parallel, "parallel", 6, "schedules run at once (most of a schedule is waiting)")
	only := flag.String("runtime", "", "comma-separated runtimes to run (default all: "+runtimeNames()+")")
	flag.Parse()
	c.pgURL = os.Getenv("AGENTONCE_PG_URL")
	for _, r := range runtimes {
		if *only == "" || slices.Contains(strings.Split(*only, ","), r.Name) {
			c.runtimes = append(c.runtimes, r)
		}
	}
	if len(c.runtimes) == 0 {
		fmt.Fprintf(os.Stderr, "maxfired: -runtime %q names none of %s\n", *only, runtimeNames())
		os.Exit(2)
	}
	if c.random < 0 || c.crashes < 1 || c.parallel < 1 {
		fmt.Fprintln(os.Stderr, "maxfired: -random must be ≥ 0, -crashes and -parallel ≥ 1")
		os.Exit(2)
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "maxfired:", err)
		os.Exit(1)
	}
	c.worker = self
	start := time.Now()
	rows, err := sweep(context.Background(), c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "maxfired:", err)
		os.Exit(1)
	}
	printTable(os.Stdout, rows)
	fmt.Printf("\n%d random schedules of up to %d crashes per runtime and mode, seed %d; %s\n",
		c.random, c.crashes, c.seed, time.Since(start).Round(time.Second))
	for _, r := range rows {
		if r.once.max > 1 {
			os.Exit(1) // the guarantee broke: the table says where
		}
	}
}
