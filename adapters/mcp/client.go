package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/mcpcall"
	"github.com/agentonce/agentonce/retryclass"
)

// ClientOptions configure ClientTools. A nil *ClientOptions means every
// default.
type ClientOptions struct {
	// Effects gives remote tools their effect kind, by remote name. It
	// wins over whatever the server advertises.
	Effects map[string]journal.Effect
	// TrustAnnotations says the server is trusted, so that a tool not in
	// Effects gets its kind from its annotations and MetaDedupes
	// (mcpcall.EffectOf). Without it such a tool is Unkeyed: the MCP
	// specification asks clients not to rely on an untrusted server's
	// hints, and a false idempotentHint would charge twice.
	TrustAnnotations bool
	// Tenant, when set, is sent as MetaTenant (a server with an Identity
	// ignores it and takes the tenant from authentication).
	Tenant string
	// Prefix is put before each remote name to make the harness tool's
	// name (to keep two servers' tools apart); empty means none.
	Prefix string
}

// ClientTools lists the tools of the MCP server behind cs and returns them
// as harness tools to Register: each Func calls the remote tool through
// cs, sending the harness's idempotency key in _meta (MetaKey) so that a
// server on agentonce keys the call by the same intent and answers a
// retry from its journal, with the call's session, turn and tenant
// (MetaSession, MetaTurn, MetaTenant; ClientOptions.Tenant wins). See the package documentation for the effect
// kinds and the results.
func ClientTools(ctx context.Context, cs *sdk.ClientSession, opts *ClientOptions) ([]harness.Tool, error) {
	if opts == nil {
		opts = &ClientOptions{}
	}
	var tools []harness.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("agentonce mcp: listing the server's tools: %w", err)
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("agentonce mcp: remote tool %s: input schema: %w", t.Name, err)
		}
		tools = append(tools, harness.Tool{
			Name:        opts.Prefix + t.Name,
			Description: t.Description,
			Effect:      remoteEffect(t, opts),
			Schema:      schema,
			Func:        remoteFunc(cs, t.Name, opts.Tenant),
		})
	}
	return tools, nil
}

// remoteEffect is the configured kind, else for a trusted server what its
// hints say, else Unkeyed.
func remoteEffect(t *sdk.Tool, opts *ClientOptions) journal.Effect {
	if e, ok := opts.Effects[t.Name]; ok {
		return e
	}
	if !opts.TrustAnnotations {
		return journal.Unkeyed
	}
	var h mcpcall.Hints
	if a := t.Annotations; a != nil {
		ro, idem := a.ReadOnlyHint, a.IdempotentHint
		h = mcpcall.Hints{ReadOnly: &ro, Idempotent: &idem, Destructive: a.DestructiveHint, OpenWorld: a.OpenWorldHint}
	}
	dedupes, _ := t.Meta[MetaDedupes].(bool)
	return mcpcall.EffectOf(h, dedupes)
}

// codeRejectedByTransport is the JSON-RPC code the go-sdk client gives a
// request its transport could not complete (a connection reset after the
// request was sent among them): not an answer of the server's.
const codeRejectedByTransport = -32005

// remoteFunc calls the remote tool name with the harness's key in _meta.
func remoteFunc(cs *sdk.ClientSession, name, tenant string) harness.Func {
	return func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		meta, tenant := sdk.Meta{}, tenant
		if key, ok := downstream.KeyFromContext(ctx); ok {
			meta[MetaKey] = key.String()
		}
		// The key alone places the call; the session and turn name it in
		// the server's records (agentctl ls --session on either side).
		if c, ok := downstream.CallFromContext(ctx); ok {
			if c.Session != "" && c.Turn != "" {
				meta[MetaSession], meta[MetaTurn] = c.Session, c.Turn
			}
			if tenant == "" {
				tenant = c.Tenant
			}
		}
		if tenant != "" {
			meta[MetaTenant] = tenant
		}
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: in, Meta: meta})
		if err != nil {
			var werr *jsonrpc.Error
			if errors.As(err, &werr) && werr.Code != codeRejectedByTransport {
				// The server answered the request with a protocol error
				// (an unknown tool, invalid parameters): the tool did not
				// run.
				return nil, retryclass.Permanent(fmt.Errorf("remote tool %s: %w", name, err))
			}
			// No answer, or the SDK's transport failed: the call may have
			// run.
			return nil, fmt.Errorf("remote tool %s: %w", name, err)
		}
		return outputOf(name, res)
	}
}

// outputOf is the harness output of a remote result: the structured
// content, else the text as JSON if it is JSON, else the text as a JSON
// string. A tool error is classified by the server's agentonce status when
// it sent one; a plain server's tool error is its word that the tool
// failed.
func outputOf(name string, res *sdk.CallToolResult) (json.RawMessage, error) {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	text := b.String()
	if res.IsError {
		err := fmt.Errorf("remote tool %s: %s", name, text)
		switch status, _ := res.Meta[MetaStatus].(string); status {
		case harness.Unknown.String(), harness.InProgress.String():
			return nil, retryclass.MarkMaybeExecuted(err)
		case harness.Suppressed.String():
			return nil, retryclass.Suppress(err)
		case harness.AwaitingApproval.String(): // nothing ran; a re-issue asks again once approved
			return nil, retryclass.MarkNotExecuted(err)
		default: // failed, rejected, or a server without agentonce
			return nil, retryclass.Permanent(err)
		}
	}
	if res.StructuredContent != nil {
		out, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, retryclass.MarkMaybeExecuted(fmt.Errorf("remote tool %s: structured content: %w", name, err))
		}
		return out, nil
	}
	if json.Valid([]byte(text)) {
		return json.RawMessage(text), nil
	}
	out, _ := json.Marshal(text)
	return out, nil
}
