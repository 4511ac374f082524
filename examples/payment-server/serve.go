package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/agentonce/agentonce/journal"
	_ "github.com/agentonce/agentonce/journal/bolt"     // plain paths: bbolt files
	_ "github.com/agentonce/agentonce/journal/postgres" // postgres:// journals
	_ "github.com/agentonce/agentonce/journal/redis"    // redis:// journals
)

// serveMain runs the payment API until ctx ends. It prints the address it
// listens on as its first line of output.
func serveMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:4242", "listen on `ADDR` (port 0 picks one)")
	loc := fs.String("journal", "payment-server.journal", "the journal: a bbolt file `PATH`, a postgres:// or a redis:// URL")
	ledgerPath := fs.String("ledger", "", "the ledger `FILE` of charges made (default: the journal's path + .ledger, or payment-server.ledger)")
	slow := fs.Duration("slow", 0, "wait `D` after committing a charge before answering (to be killed in)")
	lease := fs.Duration("lease", 0, "the middleware's lease `TTL` (default its own)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return flagError{err}
	}
	if *ledgerPath == "" {
		*ledgerPath = "payment-server.ledger"
		if _, isURL := journal.Scheme(*loc); !isURL {
			*ledgerPath = *loc + ".ledger"
		}
	}
	store, err := journal.Open(ctx, *loc, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	l, err := openLedger(*ledgerPath)
	if err != nil {
		return err
	}
	defer l.close()
	so := serverOptions{leaseTTL: *lease}
	if *slow > 0 {
		so.slow = func() { time.Sleep(*slow) }
	}
	h, err := newServer(store, l, so)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
