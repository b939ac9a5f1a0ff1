//go:build !windows

// The plugin's server entry is a sh script (plugin/bin/claude-agent-mcp):
// not on Windows.

package e2e_test

// The Claude Code plugin (plugin/, listed by the marketplace in
// .claude-plugin/ at the repository root), installed by the real CLI from
// this checkout into a scratch HOME, with the fake API behind it:
//   - `claude plugin marketplace add <checkout>` and `claude plugin install
//     subagent-fanout@claude-agent-mcp` succeed (0.2–0.3 s each);
//   - `claude mcp list`, run from another directory, shows the plugin's
//     server (plugin:subagent-fanout:claude-agent) connected: the plugin's
//     wrapper, bin/claude-agent-mcp, found the built binary on PATH;
//   - `claude -p /subagent-fanout:dashboard` sends the command's prompt; the
//     scripted model loads the server's claude_session_list through
//     ToolSearch (2.1.330 defers MCP tools), calls it — allowed by the
//     command's allowed-tools, with no --allowedTools given — and answers
//     with the dashboardUrl it returned (the plugin starts the server with
//     --ui on).
// The host model sees the tools as mcp__plugin_<plugin>_<server>__<tool>.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/e2eenv"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
)

const (
	pluginName      = "subagent-fanout"  // plugin/.claude-plugin/plugin.json
	marketplaceName = "claude-agent-mcp" // .claude-plugin/marketplace.json
	// pluginListTool is claude_session_list as the host model sees it.
	pluginListTool = "mcp__plugin_" + pluginName + "_claude-agent__claude_session_list"
	pluginCallID   = "toolu_dashlink_list"
	// pluginMinVersion is the oldest CLI the plugin is tested with.
	pluginMinVersion = "2.1.330"
	// pluginMaxSearches bounds the host model's ToolSearch calls.
	pluginMaxSearches = 5
)

func TestE2EPlugin(t *testing.T) {
	claude := requirePluginCLI(t)
	bin := serverBinary(t)
	root, err := e2eenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	api, err := fakeapi.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Close)
	home, env := e2eenv.Env(t, api.URL())
	// The wrapper finds the server on PATH, as after a Homebrew install;
	// the server finds the CLI by its flag's environment twin.
	env["PATH"] = filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	env["CLAUDE_AGENT_MCP_CLAUDE_PATH"] = claude
	other := filepath.Join(home, "elsewhere")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, claude, args...)
		cmd.Dir = dir
		cmd.Env = childEnv(env)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("claude %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
		}
		return string(out)
	}

	run(home, "plugin", "marketplace", "add", root)
	run(home, "plugin", "install", pluginName+"@"+marketplaceName)

	list := run(other, "mcp", "list")
	connected := regexp.MustCompile(`(?m)^plugin:` + pluginName + `:claude-agent: .*bin/claude-agent-mcp .*Connected`)
	if !connected.MatchString(list) {
		t.Fatalf("claude mcp list does not show the plugin's server connected:\n%s", list)
	}

	api.SetHandler(pluginModel)
	out := run(other, "-p", "/"+pluginName+":dashboard")
	if !regexp.MustCompile(`Dashboard: http://127\.0\.0\.1:\d+/ui/`).MatchString(out) {
		t.Errorf("claude -p /%s:dashboard did not answer with the dashboard's link from claude_session_list:\n%s", pluginName, out)
	}
	var prompt *fakeapi.Request
	for _, r := range api.MessageRequests() {
		if r.IsMainConversation() {
			prompt = &r
			break
		}
	}
	if prompt == nil {
		t.Fatal("no request of the host's main conversation reached the fake API")
	}
	if !strings.Contains(string(prompt.Body), "dashboardUrl") {
		t.Errorf("the first request does not carry the dashboard command's prompt (no dashboardUrl in it)")
	}
	if !strings.Contains(string(prompt.Body), pluginName+":fan-out") {
		t.Errorf("the plugin's skill %s:fan-out is not offered to the host model", pluginName)
	}
}

// pluginModel is the host model for the dashboard command: it loads
// claude_session_list through ToolSearch when the request does not offer
// it yet, calls it, then answers with the dashboardUrl of its result. It
// decides from the conversation alone, so a retried request gets the same
// answer; requests other than the main conversation's get the default.
func pluginModel(r *fakeapi.Request) *fakeapi.Reply {
	if !r.IsMainConversation() {
		return nil
	}
	if tr, ok := r.ToolResult(pluginCallID); ok {
		var out struct {
			DashboardURL string `json:"dashboardUrl"`
		}
		if err := json.Unmarshal([]byte(tr.Content), &out); err != nil || out.DashboardURL == "" {
			return fakeapi.TextReply(fmt.Sprintf("No dashboard link (is_error=%v): %s", tr.IsError, tr.Content))
		}
		return fakeapi.TextReply("Dashboard: " + out.DashboardURL)
	}
	if r.HasTool(pluginListTool) {
		return fakeapi.ToolUseReply("", fakeapi.ToolUse(pluginCallID, pluginListTool, map[string]any{}))
	}
	searches := 0
	for _, u := range r.ToolUses() {
		if u.Name == "ToolSearch" {
			searches++
		}
	}
	if searches >= pluginMaxSearches {
		return fakeapi.TextReply(fmt.Sprintf("%s was not loaded after %d ToolSearch calls", pluginListTool, searches))
	}
	return fakeapi.ToolUseReply("", fakeapi.ToolUse(fmt.Sprintf("toolu_dashlink_search_%d", searches+1), "ToolSearch",
		map[string]any{"query": "select:" + pluginListTool, "max_results": 1}))
}

// requirePluginCLI returns the CLI to install the plugin with: one older
// than pluginMinVersion (the newest supported) skips the test,
// except under CI=true, where it fails.
func requirePluginCLI(t *testing.T) string {
	t.Helper()
	claude := e2eenv.FindClaude(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v, err := claudeagent.CLIVersion(ctx, claude)
	if err != nil {
		t.Fatalf("the CLI's version: %v", err)
	}
	if claudeagent.CompareVersions(v, pluginMinVersion) < 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the CLI at %s is %s; the plugin test needs %s or newer (CI=true)", claude, v, pluginMinVersion)
		}
		t.Skipf("the CLI at %s is %s; the plugin test needs %s or newer", claude, v, pluginMinVersion)
	}
	return claude
}
