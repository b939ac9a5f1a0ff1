package agenttools_test

import (
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
)

// TestMain lets the test binary double as the fake claude CLI (see
// fakecli.Command).
func TestMain(m *testing.M) { fakecli.TestMain(m) }
