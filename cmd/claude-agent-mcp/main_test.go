package main

import (
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/ceiling"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/pgtest"
)

// TestMain lets the test binary double as the fake claude CLI (see
// fakecli.Command). The end-to-end tests, of the built binary as a
// whole, are in e2e/.
func TestMain(m *testing.M) {
	ceiling.Init() // a fake CLI started under a ceiling (as fakecli.TestMain)
	if os.Getenv(fakecli.EnvVar) == "1" {
		fakecli.Main()
	}
	code := m.Run()
	pgtest.Stop() // the PostgreSQL cluster of the store commands' tests, if started
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
