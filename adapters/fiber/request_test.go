package fiberonce

import (
	"net"
	"net/url"
	"reflect"
	"testing"
)

// parseTarget reads a request target as url.ParseRequestURI does, on its
// fast path and off it.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{
		"/v1/charges", "/v1/charges/ch_1?expand=customer&x=1", "/a?", "/a??", "/a?b?c", "/a#b", "/a%20b",
		"/a%2Fb", "/a b", "/a+b;c=d@e:f$g,h&i=j~k", "/a/../b/./c", "//a", "*", "", "a", "http://h/a?b",
		"/a?b\x01", "/a\x7f", "/é", "/a?é", "/!*'()", "/a%zz",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		var got url.URL
		err := parseTarget(&got, target)
		want, werr := url.ParseRequestURI(target)
		if (err != nil) != (werr != nil) {
			t.Fatalf("parseTarget(%q) = %v; url.ParseRequestURI = %v", target, err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, *want) {
			t.Errorf("parseTarget(%q) = %#v; want %#v", target, got, *want)
		}
		if err == nil && got.EscapedPath() != want.EscapedPath() {
			t.Errorf("parseTarget(%q).EscapedPath() = %q; want %q", target, got.EscapedPath(), want.EscapedPath())
		}
	})
}

// appendAddr writes a peer's address as its String method does.
func TestAppendAddr(t *testing.T) {
	for _, a := range []net.Addr{
		&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080},
		&net.TCPAddr{IP: net.IP{10, 1, 2, 3}, Port: 1},
		&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 443},
		&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 80, Zone: "eth0"},
		&net.TCPAddr{IP: net.IPv4zero},
		&net.TCPAddr{Port: 9},
		&net.UnixAddr{Name: "/run/app.sock", Net: "unix"},
	} {
		if got := string(appendAddr(nil, a)); got != a.String() {
			t.Errorf("appendAddr(%#v) = %q; want %q", a, got, a.String())
		}
	}
}
