package redis_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/agentonce/agentonce/journal"
	redisjournal "github.com/agentonce/agentonce/journal/redis"
)

// cutProxy relays loopback connections to a Redis server. Armed, it
// forwards the next request that contains a word to the server and then
// closes the client's connection without relaying the answer: a reply
// lost after the server applied the write. A NOSCRIPT answer (the
// server's script cache is cold: restarted, or flushed by another user of
// the server) applied nothing, so it is relayed and the proxy stays armed
// for the client's next try, which sends the script's source.
type cutProxy struct {
	ln     net.Listener
	target string
	word   []byte
	armed  atomic.Bool
	cuts   atomic.Int32 // answers dropped
	wg     sync.WaitGroup
}

func newCutProxy(t *testing.T, target, word string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, word: []byte(strings.ToLower(word))}
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *cutProxy) accept() {
	for {
		cc, err := p.ln.Accept()
		if err != nil {
			return
		}
		sc, err := net.Dial("tcp", p.target)
		if err != nil {
			cc.Close()
			continue
		}
		p.wg.Add(2)
		var cut atomic.Bool
		go func() { // server → client; the answer after a cut is dropped, and the client with it
			defer p.wg.Done()
			defer cc.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := sc.Read(buf)
				if cut.Load() {
					if !bytes.HasPrefix(buf[:n], []byte("-NOSCRIPT")) {
						p.cuts.Add(1)
						return
					}
					cut.Store(false)
					p.armed.Store(true)
				}
				if n > 0 {
					cc.Write(buf[:n])
				}
				if err != nil {
					return
				}
			}
		}()
		go func() { // client → server
			defer p.wg.Done()
			defer sc.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := cc.Read(buf)
				if n > 0 {
					if p.armed.Load() && bytes.Contains(bytes.ToLower(buf[:n]), p.word) {
						p.armed.Store(false)
						cut.Store(true)
					}
					sc.Write(buf[:n])
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// TestLostWriteReply: when the answer to a Begin's write is lost after the
// server applied it, Begin says the outcome is uncertain or that it
// started; it never sends the write again and reads its own record as
// another owner's (Held), which would leave a key nobody runs.
func TestLostWriteReply(t *testing.T) {
	c := client(t)
	p := prefix(t, c)
	ctx := context.Background()
	opt, err := goredis.ParseURL(redisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, opt.Addr, "eval") // EVALSHA, or EVAL after a NOSCRIPT
	opt.Addr = proxy.ln.Addr().String()
	pc := goredis.NewClient(opt)
	defer pc.Close()
	s, err := redisjournal.New(ctx, pc, &redisjournal.Options{Prefix: p})
	if err != nil {
		t.Fatal(err)
	}
	key := uuid.New()
	proxy.armed.Store(true)
	res, err := s.Begin(ctx, journal.BeginRequest{Key: key, Owner: "o", AttemptID: "a1", Durable: true})
	switch {
	case err != nil && !errors.Is(err, journal.ErrOutcomeUncertain):
		t.Errorf("Begin with its reply lost: %v; want an error wrapping ErrOutcomeUncertain", err)
	case err == nil && res.Outcome != journal.Started:
		t.Errorf("Begin with its reply lost = %v; want Started or ErrOutcomeUncertain, never its own record read as another's", res.Outcome)
	}
	if n := proxy.cuts.Load(); n != 1 {
		t.Fatalf("the proxy dropped %d answers; want 1", n)
	}
	if r, err := s.Get(ctx, key); err != nil || r.State != journal.StatePending || r.Lease.Owner != "o" {
		t.Errorf("record after the lost reply = %v %q, %v; want the pending record the write left", r.State, r.Lease.Owner, err)
	}
}
