package main

import (
	"os"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
)

// TestMain lets the test binary double as the fake claude CLI (see
// fakecli.Command), or as the unportable MCP server of
// TestInspectorSchemaPortability.
func TestMain(m *testing.M) {
	if os.Getenv(unportableEnv) == "1" {
		unportableServer()
		return
	}
	fakecli.TestMain(m)
}
