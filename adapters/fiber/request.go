package fiberonce

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// request makes x.req the net/http view of Fiber's request that the
// middleware and the Options' functions (Tenant, Require, Key) read: the
// method, the URL as url.ParseRequestURI reads the request target, Host,
// the headers (every line, in order, as net/http reads them: a key sent
// on two lines reaches the middleware's parser as two, and is refused), TLS,
// the peer's address, c.Context() and the route pattern. Its strings are
// copies, made in one allocation, so that what keeps one (a journal
// record's intent) never sees a fasthttp buffer reused; its Body is empty,
// as the middleware is handed the body Fiber holds (Middleware.Serve).
func (x *exchange) request(pattern string) error {
	fc := x.c.RequestCtx()
	rh := &fc.Request.Header
	uri, host, proto := rh.RequestURI(), fc.Host(), rh.Protocol()
	var stack [64]byte
	peer := appendAddr(stack[:0], fc.RemoteAddr())
	n, size := 0, len(uri)+len(host)+len(proto)+len(peer)
	for k, v := range rh.All() {
		n, size = n+1, size+len(k)+len(v)
	}
	var b strings.Builder
	b.Grow(size)
	b.Write(uri)
	b.Write(host)
	b.Write(proto)
	b.Write(peer)
	for k, v := range rh.All() {
		b.Write(k)
		b.Write(v)
	}
	s := b.String()
	cut := func(n int) string { v := s[:n]; s = s[n:]; return v }

	r := &x.req
	r.RequestURI = cut(len(uri))
	if err := parseTarget(&x.url, r.RequestURI); err != nil {
		return err
	}
	r.Host, r.Proto, r.RemoteAddr = cut(len(host)), cut(len(proto)), cut(len(peer))
	var ok bool
	if r.ProtoMajor, r.ProtoMinor, ok = http.ParseHTTPVersion(r.Proto); !ok {
		r.ProtoMajor, r.ProtoMinor = 1, 1
	}
	if r.Header == nil { // else a recycled exchange's, emptied
		r.Header = make(http.Header, n)
	}
	if cap(x.vals) < n {
		x.vals = make([]string, n)
	}
	x.vals = x.vals[:n]
	r.URL, r.Pattern = &x.url, pattern
	vals := x.vals
	n = 0
	for k, v := range rh.All() {
		name, value := http.CanonicalHeaderKey(cut(len(k))), cut(len(v))
		switch vs, ok := r.Header[name]; {
		case name == "Transfer-Encoding":
			r.TransferEncoding = append(r.TransferEncoding, value)
		case ok:
			r.Header[name] = append(vs, value)
		default:
			vals[n] = value
			r.Header[name] = vals[n : n+1 : n+1]
			n++
		}
	}
	r.Method = x.c.Method()
	r.Body = http.NoBody
	r.ContentLength = int64(len(fc.Request.Body()))
	r.TLS = fc.TLSConnectionState()
	if ctx := x.c.Context(); ctx != context.Background() {
		*r = *r.WithContext(ctx)
	}
	return nil
}

// parseTarget sets u to the request target as url.ParseRequestURI reads
// it. A path of characters that escaping leaves as they are, and a query
// without control characters, are read without it: the path is then its
// own escaped form, and RawPath empty.
func parseTarget(u *url.URL, target string) error {
	path, query, hasQuery := strings.Cut(target, "?")
	if plainPath(path) && !hasCTL(query) {
		*u = url.URL{Path: path, RawQuery: query, ForceQuery: hasQuery && query == ""}
		return nil
	}
	p, err := url.ParseRequestURI(target)
	if err != nil {
		return err
	}
	*u = *p
	return nil
}

// plainPath reports whether p is an absolute path of letters, digits and
// the characters that url.PathEscape leaves in a path segment or between
// segments.
func plainPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-_.~$&+,/:;=@", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// hasCTL reports whether s holds an ASCII control character, which
// url.ParseRequestURI refuses.
func hasCTL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// appendAddr appends addr as net/http's Request.RemoteAddr holds it,
// addr.String(), without allocating for a TCP address.
func appendAddr(dst []byte, addr net.Addr) []byte {
	if a, ok := addr.(*net.TCPAddr); ok && (len(a.IP) == net.IPv4len || len(a.IP) == net.IPv6len) {
		ip, _ := netip.AddrFromSlice(a.IP)
		return netip.AddrPortFrom(ip.Unmap().WithZone(a.Zone), uint16(a.Port)).AppendTo(dst)
	}
	return append(dst, addr.String()...)
}
