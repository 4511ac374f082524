package idempotency_test

import (
	"bytes"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
)

// buildFlags are go build's flags for the agentctl the test builds.
var buildFlags []string

// The middleware's records are ordinary journal records: the agentctl
// binary lists the unknown one a panic left, shows it, draws it, and its
// resolve settles it; the next request with the key gets the verdict.
func TestAgentctlResolvesServerRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the agentctl binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "agentctl")
	if out, err := exec.Command("go", append(append([]string{"build"}, buildFlags...), "-o", bin, "github.com/agentonce/agentonce/cmd/agentctl")...).CombinedOutput(); err != nil {
		t.Fatalf("building agentctl: %v\n%s", err, out)
	}
	path := filepath.Join(dir, "server.journal")
	agentctl := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		cmd := exec.Command(bin, append(args, "--journal", path)...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("agentctl %s: %v\n%s", strings.Join(args, " "), err, errb.String())
		}
		return out.String()
	}

	store, err := journal.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var l ledger
	srv := chargeServer(t, store, &idempotency.Options{ErrorLog: t.Logf}, &l, func(w http.ResponseWriter, r *http.Request) {
		l.add("")
		panic("lost the card network after charging")
	})
	post(t, srv.URL+"/v1/charges", "order-77", `{"amount":100}`)
	srv.Close()
	store.Close() // agentctl opens the bbolt file for writing

	ls := agentctl("ls", "--state", "unknown")
	fields := strings.Split(strings.TrimSpace(ls), "\t")
	if len(fields) != 8 || fields[3] != "order-77" || fields[5] != "POST /v1/charges" {
		t.Fatalf("agentctl ls --state unknown =\n%s\nwant one record, session order-77, tool POST /v1/charges", ls)
	}
	t.Logf("agentctl ls --state unknown: %s", ls)
	key := fields[1]
	if show := agentctl("show", key); !strings.Contains(show, "panicked") {
		t.Errorf("agentctl show %s =\n%s\nwant the panic named", key, show)
	}
	if tl := agentctl("timeline", "--session", "order-77"); !strings.Contains(tl, "POST /v1/charges") {
		t.Errorf("agentctl timeline =\n%s\nwant the route drawn", tl)
	}
	agentctl("resolve", key, "--succeeded", "--output", `{"id":"ch_1","status":"succeeded"}`, "--by", "ops")

	store, err = journal.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv = chargeServer(t, store, nil, &l, func(w http.ResponseWriter, r *http.Request) { l.add("") })
	st, h, b := post(t, srv.URL+"/v1/charges", "order-77", `{"amount":100}`)
	if st != 200 || b != `{"id":"ch_1","status":"succeeded"}` || h.Get("Idempotent-Replayed") != "true" {
		t.Errorf("after agentctl resolve: %d %s replayed=%q; want 200 with the operator's output, replayed", st, b, h.Get("Idempotent-Replayed"))
	}
	if l.count() != 1 {
		t.Errorf("effects = %d; want 1", l.count())
	}
}
