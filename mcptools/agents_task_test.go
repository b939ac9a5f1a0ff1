package mcptools

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/agentfile"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// The agent tools' own tests are agents_test.go and agentcall_test.go; this one is the
// tasks': an agent tool's call becomes a task as claude_chat_query's does.

// TestAgentToolsTask: a long turn of an agent tool becomes an MCP task
// exactly as claude_chat_query's, and the task's result names the session.
func TestAgentToolsTask(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "reviewer.md"), []byte("---\nname: reviewer\ndescription: Reviews code\n---\nP.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	agents := NewAgents(AgentOptions{Config: agentfile.Config{Sources: agentfile.Sources(agentfile.SourceDirs), Dirs: []string{dir}}})
	t.Cleanup(agents.Close)
	opts := taskOpts
	opts.Agents = agents
	c := newRawClient(t, "2026-07-28", tasksCaps, sessions.Config{}, opts)
	res := c.tool("reviewer", map[string]any{"prompt": "SLOW3", "cwd": dir})
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || id == "" {
		t.Fatalf("not a task: %v", res)
	}
	st := c.pollTask(id, taskCompleted)
	result, _ := st["result"].(map[string]any)
	sc := structured(result)
	sid, _ := sc["sessionId"].(string)
	if sc["finalText"] != "chunk0 chunk1 chunk2 " || sid == "" {
		t.Fatalf("the task's result = %v", result)
	}
	if s, err := c.mgr.Get(sid); err != nil || s.Info().AgentTool != "reviewer" {
		t.Errorf("the task's session: %v", err)
	}
	// Continuing the conversation goes the same way.
	res = c.tool("reviewer", map[string]any{"prompt": "SLOW2", "sessionId": sid})
	if id, _ = res["taskId"].(string); id == "" {
		t.Fatalf("continuing: not a task: %v", res)
	}
	result, _ = c.pollTask(id, taskCompleted)["result"].(map[string]any)
	if sc := structured(result); sc["sessionId"] != sid || sc["finalText"] != "chunk0 chunk1 " {
		t.Errorf("continuing: the task's result = %v", result)
	}
}
