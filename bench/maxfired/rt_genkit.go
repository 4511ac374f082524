package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// external names the runtimes whose worker is a command of its own,
// by the directory of its module under the workspace's root: the sweep
// builds it.
var external = map[string]string{"genkit": "bench/maxfired/genkit"}

func init() {
	runtimes = append(runtimes, runtime{Name: "genkit",
		How: "Genkit's Generate with a tool defined by genkit.DefineTool; Genkit (Go) keeps no generation state of its own (an interrupt's history is the application's to keep, and this turn has none), so a restarted application generates the user's turn again"})
}

// buildExternal builds the worker command of the runtime named name into
// dir and returns its path.
func buildExternal(ctx context.Context, name, dir string) (string, error) {
	gowork, err := exec.CommandContext(ctx, "go", "env", "GOWORK").Output()
	work := strings.TrimSpace(string(gowork))
	if err != nil || work == "" || work == "off" {
		return "", errors.New("its worker is built from the repository: run inside it, with its go.work")
	}
	out := filepath.Join(dir, name+"-worker")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	cmd.Dir = filepath.Join(filepath.Dir(work), external[name])
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(cmd.Dir, "go.work")) // its own workspace
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building its worker in %s: %v: %s", cmd.Dir, err, b)
	}
	return out, nil
}
