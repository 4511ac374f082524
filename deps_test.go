package agentonce_test

import (
	"os/exec"
	"strings"
	"testing"
)

// A program on PostgreSQL links no bbolt: package harness, and the
// packages such a program imports, do not depend on it. Only this
// package (Open's default store) links it in.
func TestPostgresProgramLinksNoBbolt(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list dependencies with")
	}
	for _, pkgs := range [][]string{
		{"github.com/agentonce/agentonce/harness"},
		{"github.com/agentonce/agentonce/harness", "github.com/agentonce/agentonce/journal/postgres"},
	} {
		out, err := exec.Command(gobin, append([]string{"list", "-deps"}, pkgs...)...).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", strings.Join(pkgs, " "), err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == "go.etcd.io/bbolt" || strings.HasPrefix(dep, "go.etcd.io/bbolt/") ||
				dep == "github.com/agentonce/agentonce/journal/bolt" {
				t.Errorf("go list -deps %s includes %s; a program on PostgreSQL must not link bbolt", strings.Join(pkgs, " "), dep)
			}
		}
	}
}
