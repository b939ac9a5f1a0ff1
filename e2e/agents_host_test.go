//go:build linux

package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
)

// toolListings returns, in order, the tool names of each answer the server
// gave to the host's tools/list, as the JSON-RPC tap saw them.
func (h *host) toolListings() [][]string {
	out := h.rpc(h.rpcOut)
	var listings [][]string
	for _, req := range h.rpc(h.rpcIn) {
		if req.Method != "tools/list" {
			continue
		}
		for _, resp := range out {
			if resp.Method != "" || !bytes.Equal(resp.ID, req.ID) {
				continue
			}
			var res struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			if json.Unmarshal(resp.Result, &res) == nil {
				var names []string
				for _, t := range res.Tools {
					names = append(names, t.Name)
				}
				listings = append(listings, names)
			}
		}
	}
	return listings
}

// waitListing waits until an answer to tools/list satisfies ok. The tap
// files are written by other processes: polling them is the only way to
// see what they did.
func (h *host) waitListing(ctx context.Context, ok func([]string) bool) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if slices.ContainsFunc(h.toolListings(), ok) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (%v); the host's tools/list answers: %v", ctx.Err(), context.Cause(ctx), h.toolListings())
		case <-tick.C:
		}
	}
}

// TestE2EAgentToolsHost: an agent file added to the project while the real
// interactive Claude Code runs with the server as its MCP host becomes a
// tool: the server sends notifications/tools/list_changed, the host lists
// the tools again and its model loads and calls the new tool, which runs
// the child as the agent. Nothing is restarted.
func TestE2EAgentToolsHost(t *testing.T) {
	const tool = "reviewer"
	var ready chan struct{} // closed once the host has listed the agent tool
	h := startHost(t, hostOptions{prompt: "Ask the new reviewer agent.", env: map[string]string{"CLAUDE_CODE_DISABLE_MCP_TASKS": "1"},
		plan: func(h *host) hostPlan {
			ready = make(chan struct{})
			return hostPlan{final: "HOST DONE",
				// The host's first request waits for the agent tool, which the
				// test adds once the host has connected.
				gate: func(*fakeapi.Request) error {
					ctx, cancel := h.wait(60 * time.Second)
					defer cancel()
					select {
					case <-ready:
						return nil
					case <-ctx.Done():
						return fmt.Errorf("the agent tool never reached the host: %v", context.Cause(ctx))
					}
				},
				steps: [][]hostCall{{{id: "toolu_agent", tool: tool, input: staticInput(map[string]any{"prompt": "AGENT-HOST-1 review"})}}},
			}
		}})
	start := time.Now()
	ctx, cancel := h.wait(60 * time.Second)
	defer cancel()
	if err := h.waitListing(ctx, func(names []string) bool { return slices.Contains(names, "claude_chat_query") }); err != nil {
		t.Fatalf("the host never listed the server's tools: %v", err)
	}
	if first := h.toolListings()[0]; slices.Contains(first, tool) {
		t.Fatalf("the host's first tools/list already has %s: %v", tool, first)
	}
	agents := filepath.Join(h.cwd, ".claude", "agents")
	if err := os.MkdirAll(agents, 0o755); err != nil {
		t.Fatal(err)
	}
	file := "---\nname: reviewer\ndescription: Reviews code for bugs\ntools: Read\nmodel: haiku\n---\nYou are HOSTAGENT-PROMPT-1.\n"
	if err := os.WriteFile(filepath.Join(agents, "reviewer.md"), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.waitListing(ctx, func(names []string) bool { return slices.Contains(names, tool) }); err != nil {
		t.Fatalf("the host did not list the agent tool: %v", err)
	}
	t.Logf("the host listed %s %s after the start", tool, time.Since(start).Round(10*time.Millisecond))
	close(ready)

	r := h.waitToolResult(90*time.Second, "toolu_agent")
	defer h.report(start)
	out, err := resultJSON(r, "toolu_agent")
	if err != nil {
		t.Fatal(err)
	}
	sid, _ := out["sessionId"].(string)
	if out["status"] != "completed" || out["finalText"] != "Hello from fake API (n_messages=1)" || sid == "" {
		t.Errorf("the host model got %v", out)
	}
	h.checkSessionLog(sid)
	child := h.api.Filter(func(r *fakeapi.Request) bool {
		return fakeapi.From(claudeagent.Entrypoint)(r) && strings.Contains(r.LastUserText(), "AGENT-HOST-1")
	})
	if len(child) != 1 {
		t.Fatalf("%d child requests with the prompt, want 1", len(child))
	}
	if c := child[0]; !strings.Contains(systemText(&c), "HOSTAGENT-PROMPT-1") || !strings.Contains(c.Model, "haiku") ||
		!slices.Equal(builtinTools(&c), []string{"Read"}) {
		t.Errorf("the child ran as model %s with tools %v, system prompt %q", c.Model, builtinTools(&c), tail(systemText(&c), 300))
	}
	if n := strings.Count(strings.Join(methods(h.rpc(h.rpcOut)), " "), "notifications/tools/list_changed"); n == 0 {
		t.Errorf("the server sent no notifications/tools/list_changed; it sent %v", methods(h.rpc(h.rpcOut)))
	}
	log := h.serverLog()
	if n := strings.Count(log, "claude-agent-mcp serving on stdio"); n != 1 {
		t.Errorf("the server started %d times, want once", n)
	}
	if !strings.Contains(log, "added_or_changed=[reviewer]") {
		t.Errorf("the server log does not show the agent tool added")
	}
}
