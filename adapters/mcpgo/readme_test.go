package mcpgo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
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

// The README's program, run as a process on stdio with mcp-go's client:
// tools/list shows each tool's schema and description as the README
// does, and a refund a host sends twice is done once.
func TestReadmeProgramServes(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "shop")
	if out, err := exec.Command("go", "build", "-o", bin, "./examples/readme").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tr := transport.NewStdioWithOptions(bin, nil, nil, transport.WithCommandFunc(
		func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
			return cmd, nil
		}))
	c := client.NewClient(tr)
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "host", Version: "v0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	type shown struct {
		Name        string              `json:"name"`
		Description string              `json:"description"`
		InputSchema mcp.ToolInputSchema `json:"inputSchema"`
	}
	var tools []shown
	for _, tool := range list.Tools {
		tools = append(tools, shown{tool.Name, tool.Description, tool.InputSchema})
	}
	got, _ := json.MarshalIndent(tools, "", "  ")
	if want := readmeBlock(t, "tools/list"); strings.TrimSpace(want) != string(got) {
		t.Errorf("tools/list =\n%s\nwant as README.md shows it:\n%s", got, want)
	}
	var r mcp.CallToolRequest
	r.Params.Name, r.Params.Arguments = "refund", map[string]any{"order": "A-17", "amount": 4900}
	var answers []*mcp.CallToolResult
	for range 2 {
		res, err := c.CallTool(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, res)
	}
	if source(answers[0]) != "executed" || source(answers[1]) != "replayed" || !bytes.Contains([]byte(text(answers[1])), []byte("not done again")) {
		t.Errorf("refund twice: sources %q, %q, second text %q; want executed, then replayed and said so",
			source(answers[0]), source(answers[1]), text(answers[1]))
	}
}
