package main

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// cutProxy is a loopback TCP proxy that loses answers: while cuts is
// positive, a connection whose server starts to answer is closed before a
// byte of the answer reaches the client. The server has committed by then
// (the middleware records before it answers), so the client sees the
// network failure of a request that took effect: what a retry must not
// repeat.
type cutProxy struct {
	ln   net.Listener
	to   string
	cuts atomic.Int64
	cut  atomic.Int64 // answers lost so far
	wg   sync.WaitGroup

	mu     sync.Mutex // guards conns and closed
	conns  map[net.Conn]bool
	closed bool
}

func newCutProxy(to string) (*cutProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &cutProxy{ln: ln, to: to, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// URL is the proxy's base URL.
func (p *cutProxy) URL() string { return "http://" + p.ln.Addr().String() }

// close stops the proxy and closes the connections it holds (a client's
// idle keep-alive connections among them).
func (p *cutProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// track adds c to the open connections, or closes it when the proxy is
// closing; the returned func removes it.
func (p *cutProxy) track(c net.Conn) func() {
	p.mu.Lock()
	if p.closed {
		c.Close()
	}
	p.conns[c] = true
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
		c.Close()
	}
}

func (p *cutProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.serve(c) }()
	}
}

func (p *cutProxy) serve(c net.Conn) {
	defer p.track(c)()
	s, err := net.Dial("tcp", p.to)
	if err != nil {
		return
	}
	defer p.track(s)()
	go func() { _, _ = io.Copy(s, c); s.Close() }()
	var first [1]byte
	if _, err := io.ReadFull(s, first[:]); err != nil {
		return
	}
	if p.cuts.Add(-1) >= 0 {
		p.cut.Add(1)
		return // the answer is lost: both connections close
	}
	p.cuts.Store(0)
	if _, err := c.Write(first[:]); err == nil {
		_, _ = io.Copy(c, s)
	}
}
