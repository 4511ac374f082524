package fiberonce

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"

	"github.com/agentonce/agentonce/idempotency"
)

// New returns a Fiber handler that runs the rest of the chain under m. It
// is safe for concurrent use, as m is. Mount it with app.Use (before the
// routes it protects, after Fiber's recover middleware) or on a route or
// group.
func New(m *idempotency.Middleware) fiber.Handler {
	var rs routes
	return func(c fiber.Ctx) error {
		switch c.Method() {
		case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions, fiber.MethodTrace:
			return c.Next() // idempotency passes safe methods through
		}
		pattern, ok := c.Route().Path, true
		if c.IsMiddleware() {
			pattern, ok = rs.match(c)
		}
		if !ok {
			return c.Next()
		}
		x := exchanges.Get().(*exchange)
		x.c = c
		if err := x.request(pattern); err != nil {
			x.release()
			return err
		}
		m.Serve(x, &x.req, c.Request().Body(), x)
		x.finish()
		err := x.err
		x.release()
		return err
	}
}

// exchanges recycles exchanges with their header maps and value array, so
// that a request's net/http view costs one allocation, its strings. An
// exchange goes back when Serve has returned, never while a panic passes
// through it.
var exchanges = sync.Pool{New: func() any { return new(exchange) }}

// maxPooledHeaders bounds the header maps that exchanges keeps: an
// exchange whose request or answer had more names is left to the
// collector.
const maxPooledHeaders = 32

// exchange is one request on its way through the middleware: the
// net/http request the middleware reads (request.go), the ResponseWriter
// and ReplayWriter it answers on, which write to Fiber's response, and,
// as its ServeHTTP, the rest of Fiber's chain, the handler it runs.
type exchange struct {
	c    fiber.Ctx
	req  http.Request
	url  url.URL     // req's
	vals []string    // req.Header's values
	h    http.Header // the answer's headers, made when the middleware asks for them
	// wrote: the answer's status and headers are in Fiber's response.
	// passed: the request went through unprotected, and Fiber's response
	// is the chain's own.
	wrote, passed bool
	err           error // what the chain returned that the app's error handler did not answer
}

// ServeHTTP runs the rest of Fiber's chain and hands its response to w:
// the middleware's capture, or the exchange itself when the request
// passes through unprotected, whose answer then stays as the chain wrote
// it.
func (x *exchange) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := x.c
	// The chain sees the context the middleware runs it with, as a
	// net/http handler sees r.Context(): not cancelled when the client
	// leaves, and under Options.InTx carrying the journal's transaction
	// (bolt.TxFrom, postgres.TxFrom).
	c.SetContext(r.Context())
	if err := c.Next(); err != nil {
		// The app's error handler writes the answer that is recorded; an
		// error it cannot answer goes to Fiber.
		if err := c.App().ErrorHandler(c, err); err != nil {
			x.err = err
		}
	}
	if w == http.ResponseWriter(x) {
		x.passed = true
		return
	}
	copyOut(w, c.Response())
	c.Response().Reset()
}

func (x *exchange) Header() http.Header {
	if x.h == nil {
		x.h = make(http.Header)
	}
	return x.h
}

// WriteHeader puts status and the headers set so far in Fiber's
// response, in place of what it held for their names, and empties its
// body.
func (x *exchange) WriteHeader(status int) {
	if x.wrote {
		return
	}
	x.wrote = true
	resp := x.c.Response()
	x.setHeaders(resp)
	resp.SetStatusCode(status)
	resp.ResetBody()
}

func (x *exchange) Write(p []byte) (int, error) {
	if !x.wrote {
		x.WriteHeader(http.StatusOK)
	}
	x.c.Response().AppendBody(p)
	return len(p), nil
}

// WriteReplay writes a stored answer straight into Fiber's response.
func (x *exchange) WriteReplay(r idempotency.Replay) {
	x.wrote = true
	resp := x.c.Response()
	x.setHeaders(resp)
	var prev []byte
	for k, v := range r.Header() {
		if bytes.Equal(k, prev) {
			resp.Header.AddBytesKV(k, v)
		} else {
			resp.Header.SetBytesKV(k, v)
		}
		prev = k
	}
	resp.SetStatusCode(r.Status)
	resp.SetBody(r.Body)
}

// setHeaders sets x.h's headers on resp but Content-Length, fasthttp's
// own.
func (x *exchange) setHeaders(resp *fasthttp.Response) {
	for k, vs := range x.h {
		if k == fiber.HeaderContentLength {
			continue
		}
		for i, v := range vs {
			if i == 0 {
				resp.Header.Set(k, v)
			} else {
				resp.Header.Add(k, v)
			}
		}
	}
}

// finish answers 200 with no body when the middleware wrote nothing (a
// request given up while it waited for another with its key).
func (x *exchange) finish() {
	if !x.wrote && !x.passed {
		x.WriteHeader(http.StatusOK)
	}
}

// release puts x back in exchanges, emptied, unless a header map of its
// grew past maxPooledHeaders.
func (x *exchange) release() {
	hdr, vals, h := x.req.Header, x.vals, x.h
	if len(hdr) > maxPooledHeaders || len(h) > maxPooledHeaders {
		return
	}
	clear(hdr)
	clear(vals)
	clear(h)
	*x = exchange{req: http.Request{Header: hdr}, vals: vals[:0], h: h}
	exchanges.Put(x)
}

// copyOut writes Fiber's response to w, the middleware's capture. The
// header values share one string and one slice array.
func copyOut(w http.ResponseWriter, resp *fasthttp.Response) {
	n, size := 0, 0
	for k, v := range resp.Header.All() {
		if string(k) != fiber.HeaderContentLength {
			n, size = n+1, size+len(k)+len(v)
		}
	}
	var b strings.Builder
	b.Grow(size)
	for k, v := range resp.Header.All() {
		if string(k) != fiber.HeaderContentLength {
			b.Write(k)
			b.Write(v)
		}
	}
	all, vals := b.String(), make([]string, n)
	h := w.Header()
	n, at := 0, 0
	for k, v := range resp.Header.All() {
		if string(k) == fiber.HeaderContentLength {
			continue
		}
		name := http.CanonicalHeaderKey(all[at : at+len(k)])
		value := all[at+len(k) : at+len(k)+len(v)]
		at += len(k) + len(v)
		if vs, ok := h[name]; ok {
			h[name] = append(vs, value)
			continue
		}
		vals[n] = value
		h[name] = vals[n : n+1 : n+1]
		n++
	}
	w.WriteHeader(resp.StatusCode())
	w.Write(resp.Body())
}

// routes is the app's route list, by method, rebuilt when the app's
// handler count changes.
type routes struct {
	mu       sync.RWMutex // guards count and byMethod
	count    uint32
	byMethod map[string][]string
}

// match returns the pattern of the first non-middleware route of c's
// method that c's path matches, as Fiber's router would pick it.
func (rs *routes) match(c fiber.Ctx) (string, bool) {
	app := c.App()
	n := app.HandlersCount()
	rs.mu.RLock()
	list, fresh := rs.byMethod[c.Method()], rs.count == n && rs.byMethod != nil
	rs.mu.RUnlock()
	if !fresh {
		rs.mu.Lock()
		rs.byMethod = make(map[string][]string)
		for _, r := range app.GetRoutes(true) {
			rs.byMethod[r.Method] = append(rs.byMethod[r.Method], r.Path)
		}
		rs.count = n
		list = rs.byMethod[c.Method()]
		rs.mu.Unlock()
	}
	path := c.Path()
	cfg := app.Config()
	for _, p := range list {
		if p == path || fiber.RoutePatternMatch(path, p, cfg) {
			return p, true
		}
	}
	return "", false
}
