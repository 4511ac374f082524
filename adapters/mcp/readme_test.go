package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentmcp "github.com/agentonce/agentonce/adapters/mcp"
)

// readmeBlock is the fenced block of README.md that follows the marker
// <!-- kind: examples/readme -->.
func readmeBlock(t *testing.T, kind string) string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- " + kind + ": examples/readme -->\n```[a-z]*\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatalf("README.md has no block marked <!-- %s: examples/readme -->", kind)
	}
	return string(m[1])
}

// The README's program is examples/readme/main.go, which the build compiles.
func TestReadmeProgram(t *testing.T) {
	prog, err := os.ReadFile("examples/readme/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if readmeBlock(t, "program") != string(prog) {
		t.Errorf("README.md's program is not examples/readme/main.go; copy the file into the README")
	}
}

// The README's program, run as a process on stdio with the SDK's client:
// tools/list shows each tool's schema and description as the README
// does, and a refund a host sends twice is done once.
func TestReadmeProgramServes(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "shop")
	if out, err := exec.Command("go", "build", "-o", bin, "./examples/readme").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Dir = dir
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "host", Version: "v0"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	type shown struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		InputSchema any    `json:"inputSchema"`
	}
	var tools []shown
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, shown{tool.Name, tool.Description, tool.InputSchema})
	}
	got, _ := json.MarshalIndent(tools, "", "  ")
	if want := readmeBlock(t, "tools/list"); strings.TrimSpace(want) != string(got) {
		t.Errorf("tools/list =\n%s\nwant as README.md shows it:\n%s", got, want)
	}
	var answers []*sdk.CallToolResult
	for range 2 {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "refund", Arguments: map[string]any{"order": "A-17", "amount": 4900}})
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, res)
	}
	src := func(i int) string { return metaOf(answers[i], agentmcp.MetaSource) }
	if src(0) != "executed" || src(1) != "replayed" || !strings.Contains(text(answers[1]), "not done again") {
		t.Errorf("refund twice: sources %q, %q, second text %q; want executed, then replayed and said so", src(0), src(1), text(answers[1]))
	}
}
