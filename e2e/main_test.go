package e2e_test

import (
	"maps"
	"os"
	"slices"
	"strings"
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

// pairs is env as KEY=value strings, in key order.
func pairs(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// childEnv is the inherited environment without the server's own settings
// (CLAUDE_AGENT_MCP_*: a child's come from the test, never from an outer
// environment such as a nested session's depth), then envs in order, each
// in key order: a later value of a key wins.
func childEnv(envs ...map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CLAUDE_AGENT_MCP_") {
			out = append(out, kv)
		}
	}
	for _, env := range envs {
		out = append(out, pairs(env)...)
	}
	return out
}
