//go:build linux

package e2e_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestE2EAuditFull: with the audit log on a device that is full
// (/dev/full: every write fails with ENOSPC), every tool call is refused
// with an error naming the audit log, nothing runs, and the server logs it
// at ERROR (defect: 150 calls were served with 35 lines written).
func TestE2EAuditFull(t *testing.T) {
	t.Parallel()
	e := startHTTPE2E(t, httpE2EOptions{users: []string{"alice"}, args: []string{"--audit-log", "/dev/full"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alice := e.connect(t, "alice", "")
	for _, call := range []struct {
		name string
		args map[string]any
	}{
		{"claude_session_create", map[string]any{}},
		{"claude_direct_query", map[string]any{"prompt": "hi"}},
		{"claude_session_list", map[string]any{}},
	} {
		_, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: call.name, Arguments: call.args})
		if err == nil || !strings.Contains(err.Error(), "--audit-log /dev/full") || !strings.Contains(err.Error(), "no space left on device") {
			t.Errorf("%s with the audit log full = %v, want refused naming the audit log", call.name, err)
		}
	}
	if n := len(e.api.MessageRequests()); n != 0 {
		t.Errorf("the fake API got %d requests from refused calls", n)
	}
	e.stop(t)
	log, _ := os.ReadFile(e.logPath)
	if !strings.Contains(string(log), "ERR") || !strings.Contains(string(log), "writing the audit log failed") {
		t.Errorf("the server did not log the failure at ERROR:\n%s", tail(string(log), 4000))
	}
}
