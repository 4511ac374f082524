package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, osEnv(), os.Args[1:])
	stop()
	os.Exit(code)
}
