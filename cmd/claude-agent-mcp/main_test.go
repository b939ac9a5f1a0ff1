package main

import (
	"os"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/ceiling"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/pgtest"
)

// TestMain lets the test binary double as the fake claude CLI (see
// fakecli.Command), or as the unportable MCP server of
// TestInspectorSchemaPortability.
func TestMain(m *testing.M) {
	if os.Getenv(unportableEnv) == "1" {
		unportableServer()
		return
	}
	ceiling.Init() // a fake CLI started under a ceiling (as fakecli.TestMain)
	if os.Getenv(fakecli.EnvVar) == "1" {
		fakecli.Main()
	}
	code := m.Run()
	pgtest.Stop() // the PostgreSQL cluster of the fleet's tests, if started
	os.Exit(code)
}
