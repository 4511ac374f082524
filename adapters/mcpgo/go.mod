module github.com/agentonce/agentonce/adapters/mcpgo

go 1.26.0

require github.com/agentonce/agentonce v0.0.0

require github.com/mark3labs/mcp-go v1.2.1 // indirect

replace github.com/agentonce/agentonce => ../..
