package httpserve_test

import (
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
)

// TestMain lets the test binary double as the fake claude CLI (see
// fakecli.Command).
func TestMain(m *testing.M) { fakecli.TestMain(m) }

// resText is a result's text content.
var resText = mcptest.Text
