module github.com/claude-agent-mcp/claude-agent-mcp

go 1.26.0

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/lmittmann/tint v1.2.1 // indirect
	github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/term v0.47.0 // indirect
)
