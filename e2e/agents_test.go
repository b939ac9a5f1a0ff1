//go:build linux

package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools"
)

// TestE2EAgentTools: the user's agents as tools with the real CLI. An agent
// file (of --agents-dir) and an operator file entry (--agents-file) are
// tools; a call's API request carries the agent's system prompt, only its
// tools and its model; the sessionId continues the conversation; a
// narrower tools override narrows what the API request offers.
func TestE2EAgentTools(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	agentFile := "---\nname: reviewer\ndescription: Reviews code for bugs\ntools: Read, Grep\nmodel: haiku\n---\nYou are AGENTPROMPT-E2E-1, a careful reviewer.\n"
	if err := os.WriteFile(filepath.Join(dir, "reviewer.md"), []byte(agentFile), 0o644); err != nil {
		t.Fatal(err)
	}
	opFile := filepath.Join(dir, "agents.yaml")
	if err := os.WriteFile(opFile, []byte("planner:\n  description: Plans changes\n  prompt: You are OPERATORAGENT-E2E-2.\n"+
		"  tools: [Read, Glob]\n  model: sonnet\n  effort: low\n  permissionMode: plan\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := startE2E(t, e2eOptions{args: []string{"--agents-dir", dir, "--agents-file", opFile}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	list, err := e.session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, tool := range list.Tools {
		if tool.Name != "reviewer" && tool.Name != "planner" {
			continue
		}
		found++
		b, _ := json.Marshal(map[string]any{"name": tool.Name, "description": tool.Description, "inputSchema": tool.InputSchema})
		if len(b) > mcptools.MaxAgentToolBytes {
			t.Errorf("%s: %d bytes model-visible", tool.Name, len(b))
		}
		t.Logf("%s: %d bytes model-visible", tool.Name, len(b))
	}
	if found != 2 {
		t.Fatalf("tools/list has %d of the 2 agent tools", found)
	}

	res, out := e.call(t, ctx, "reviewer", map[string]any{"prompt": "AGENT-E2E-1 look", "cwd": e.cwd}, nil)
	if res.IsError || out["status"] != "completed" {
		t.Fatalf("reviewer: %s", text(res))
	}
	sid, _ := out["sessionId"].(string)
	r := requestFor(t, e.api, "AGENT-E2E-1")
	if !strings.Contains(systemText(r), "AGENTPROMPT-E2E-1") {
		t.Errorf("the system prompt lacks the agent's: %q", tail(systemText(r), 500))
	}
	if got := builtinTools(r); !slices.Equal(got, []string{"Grep", "Read"}) {
		t.Errorf("the request offers %v, want the agent's Read and Grep", toolNames(r))
	}
	if !strings.Contains(r.Model, "haiku") {
		t.Errorf("model = %q, want the agent's haiku", r.Model)
	}

	res, out = e.call(t, ctx, "reviewer", map[string]any{"prompt": "AGENT-E2E-3 again", "sessionId": sid}, nil)
	if res.IsError || out["sessionId"] != sid {
		t.Fatalf("continuing: %s", text(res))
	}
	r = requestFor(t, e.api, "AGENT-E2E-3")
	if first := firstUserText(r); !strings.Contains(first, "AGENT-E2E-1") || !strings.Contains(systemText(r), "AGENTPROMPT-E2E-1") || !strings.Contains(r.Model, "haiku") {
		t.Errorf("continuing: the conversation starts %q, model %q", first, r.Model)
	}

	res, _ = e.call(t, ctx, "reviewer", map[string]any{"prompt": "AGENT-E2E-4", "cwd": e.cwd, "tools": []string{"Read"}}, nil)
	if res.IsError {
		t.Fatalf("narrowed tools: %s", text(res))
	}
	if got := builtinTools(requestFor(t, e.api, "AGENT-E2E-4")); !slices.Equal(got, []string{"Read"}) {
		t.Errorf("narrowed to Read, the request offers %v", got)
	}
	res, _ = e.call(t, ctx, "reviewer", map[string]any{"prompt": "AGENT-E2E-5", "cwd": e.cwd, "tools": []string{"Read", "Bash"}}, nil)
	wantToolError(t, "widened tools", res, `tools entry "Bash" is refused`)

	res, _ = e.call(t, ctx, "planner", map[string]any{"prompt": "AGENT-E2E-6 plan", "cwd": e.cwd}, nil)
	if res.IsError {
		t.Fatalf("planner: %s", text(res))
	}
	r = requestFor(t, e.api, "AGENT-E2E-6")
	if !strings.Contains(systemText(r), "OPERATORAGENT-E2E-2") || !strings.Contains(r.Model, "sonnet") {
		t.Errorf("planner: model %q, system prompt %q", r.Model, tail(systemText(r), 300))
	}
	if got := builtinTools(r); !slices.Contains(got, "Read") || !slices.Contains(got, "Glob") || slices.Contains(got, "Bash") {
		t.Errorf("planner: the request offers %v", got)
	}
	if got := effortOf(t, r); got != "low" {
		t.Errorf("planner: effort %q, want the operator entry's low", got)
	}
}
