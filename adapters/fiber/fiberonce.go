package fiberonce

import (
	"net/http"
	"sync"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/adaptor"
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
		r, err := adaptor.ConvertRequest(c, true)
		if err != nil {
			return err
		}
		r.Pattern = pattern
		w := &writer{c: c, h: make(http.Header)}
		var nextErr error
		next := http.HandlerFunc(func(hw http.ResponseWriter, _ *http.Request) {
			if err := c.Next(); err != nil {
				// The app's error handler writes the answer that is
				// recorded; an error it cannot answer goes to Fiber.
				if err := c.App().ErrorHandler(c, err); err != nil {
					nextErr = err
				}
			}
			copyOut(hw, c.Response())
			c.Response().Reset()
		})
		m.Handler(next).ServeHTTP(w, r)
		w.flush()
		return nextErr
	}
}

// copyOut writes Fiber's response to w, the middleware's capture.
func copyOut(w http.ResponseWriter, resp *fasthttp.Response) {
	h := w.Header()
	for k, v := range resp.Header.All() {
		name := string(k)
		if name == fiber.HeaderContentLength {
			continue
		}
		h.Add(name, string(v))
	}
	w.WriteHeader(resp.StatusCode())
	w.Write(resp.Body())
}

// writer is the http.ResponseWriter the middleware answers on: it
// collects the answer and writes it to Fiber's response at flush.
type writer struct {
	c      fiber.Ctx
	h      http.Header
	status int
	body   []byte
}

func (w *writer) Header() http.Header { return w.h }

func (w *writer) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *writer) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body = append(w.body, p...)
	return len(p), nil
}

func (w *writer) flush() {
	resp := w.c.Response()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	for k, vs := range w.h {
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
	resp.SetStatusCode(w.status)
	resp.SetBodyRaw(w.body)
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
