package sessions

import (
	"os"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/fakecli"
)

// TestMain lets the test binary double as the fake claude CLI.
func TestMain(m *testing.M) {
	if os.Getenv(fakecli.EnvVar) == "1" {
		fakecli.Main()
	}
	os.Exit(m.Run())
}
