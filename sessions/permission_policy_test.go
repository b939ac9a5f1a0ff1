package sessions

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// TestDecide: the caller's answer when it gives one (an allow completed
// with the input), else the policy's, saying why.
func TestDecide(t *testing.T) {
	req := &turn.PermissionRequest{CanUseToolRequest: &claudeagent.CanUseToolRequest{ToolName: "Bash", Input: []byte(`{"command":"ls"}`)}}
	deny := permissionPolicy{Timeout: time.Minute, Log: slog.New(slog.DiscardHandler)}
	if res := deny.Decide(context.Background(), req, nil); res.Behavior != "deny" || !strings.Contains(res.Message, "cannot be asked") {
		t.Errorf("nobody to ask: %+v", res)
	}
	failing := func(context.Context, *turn.PermissionRequest) (*claudeagent.PermissionResult, error) {
		return nil, errors.New("gone")
	}
	allow := deny
	allow.Answer = "allow"
	if res := allow.Decide(context.Background(), req, failing); res.Behavior != "allow" {
		t.Errorf("the caller failed, policy allow: %+v", res)
	}
	if res := deny.Decide(context.Background(), req, failing); res.Behavior != "deny" || !strings.Contains(res.Message, "asking the caller failed (gone)") {
		t.Errorf("the caller failed, policy deny: %+v", res)
	}
	yes := func(context.Context, *turn.PermissionRequest) (*claudeagent.PermissionResult, error) {
		return &claudeagent.PermissionResult{Behavior: "allow"}, nil
	}
	if res := deny.Decide(context.Background(), req, yes); res.Behavior != "allow" || len(res.UpdatedInput) == 0 {
		t.Errorf("the caller allowed: %+v, want the input in updatedInput", res)
	}
}
