package check

import (
	"net/url"
	"strings"
	"testing"
)

// TestRedisLocation: the agents' and the middleware's Redis journals are
// named on one server and on a cluster, each under the prefix given, the
// URL's other parameters kept; anything else is refused by name.
func TestRedisLocation(t *testing.T) {
	for _, tt := range []struct {
		in, scheme, keep string
	}{
		{"redis://127.0.0.1:6379/0", "redis", ""},
		{"rediss://127.0.0.1:6379/0", "rediss", ""},
		{"redis+cluster://127.0.0.1:7000/?addr=127.0.0.1:7001&replicas=1", "redis+cluster", "addr=127.0.0.1:7001"},
		{"rediss+cluster://127.0.0.1:7000/?replicas=1", "rediss+cluster", "replicas=1"},
	} {
		r := &runner{o: Options{RedisURL: tt.in}}
		loc, drop, err := r.redisLocation("agentcheck_6_x")
		if err != nil {
			t.Errorf("redisLocation on %s: %v", tt.in, err)
			continue
		}
		drop()
		u, err := url.Parse(loc)
		if err != nil || u.Scheme != tt.scheme || u.Query().Get("prefix") != "agentcheck_6_x" || !keeps(u, tt.keep) {
			t.Errorf("redisLocation on %s = %s, %v; want scheme %s, prefix agentcheck_6_x and %s", tt.in, loc, err, tt.scheme, tt.keep)
		}
	}
	for _, bad := range []string{"", "postgres://127.0.0.1/x", "redis+sentinel://127.0.0.1:26379", "http://127.0.0.1:6379"} {
		r := &runner{o: Options{RedisURL: bad}}
		if _, _, err := r.redisLocation("p"); err == nil || !strings.Contains(err.Error(), "want a redis:// or redis+cluster:// URL") {
			t.Errorf("redisLocation on %q: %v; want the URL refused", bad, err)
		}
	}
}

// keeps reports whether u's query holds the parameter kv ("k=v"; "" holds).
func keeps(u *url.URL, kv string) bool {
	k, v, _ := strings.Cut(kv, "=")
	return kv == "" || u.Query().Get(k) == v
}
