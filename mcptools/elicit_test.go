package mcptools

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// TestPermissionElicitationBothEras: a permission question reaches a client
// on 2025-11-25 (elicitation/create during the call) and one on the SDK's
// newest protocol (an input-required result the client answers by calling
// again), and the answer reaches the CLI either way.
func TestPermissionElicitationBothEras(t *testing.T) {
	for _, proto := range []string{"2025-11-25", ""} {
		for _, decision := range []string{"allow_once", "deny"} {
			t.Run("protocol="+proto+"/"+decision, func(t *testing.T) {
				var asked atomic.Int32
				var message atomic.Value
				f := newFakeServerWith(t, proto, sessions.Config{}, Options{},
					func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						asked.Add(1)
						message.Store(r.Params.Message)
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision, "reason": "because"}}, nil
					})
				cwd := t.TempDir()
				res, out := f.call(t, "claude_direct_query", map[string]any{"cwd": cwd, "prompt": "TOOL_BASH[touch x && echo hi]"}, nil)
				if res.IsError {
					t.Fatalf("query: %s", resText(res))
				}
				if asked.Load() != 1 {
					t.Fatalf("asked %d times", asked.Load())
				}
				if msg, _ := message.Load().(string); !strings.Contains(msg, "$ touch made_by_tool.txt && echo hi") /* the fake replays the recorded command */ || !strings.Contains(msg, cwd) {
					t.Errorf("question = %q", msg)
				}
				md := out["metadata"].(map[string]any)
				denials, _ := md["permissionDenials"].([]any)
				if decision == "deny" && len(denials) != 1 {
					t.Errorf("deny: permissionDenials = %v", md["permissionDenials"])
				}
				if decision == "allow_once" && len(denials) != 0 {
					t.Errorf("allow: permissionDenials = %v", md["permissionDenials"])
				}
				if n := f.mgr.Count(); n != 0 {
					t.Errorf("%d sessions left", n)
				}
			})
		}
	}
}
