//go:build !windows

// The plugin's server entry is a sh script (plugin/bin/claude-agent-mcp):
// not on Windows.

package e2e_test

// The Claude Code plugin (plugin/, listed by the marketplace in
// .claude-plugin/ at the repository root), installed by the real CLI from
// this checkout into a scratch HOME, with the fake API behind it:
//   - `claude plugin marketplace add <checkout>`, `claude plugin marketplace
//     remove`, the README's command from a clone (`claude plugin marketplace
//     add ./`, read from README.md and run in the checkout) and `claude
//     plugin install subagent-fanout@claude-agent-mcp` succeed (0.2–0.3 s
//     each);
//   - `claude mcp list`, run from another directory, shows the plugin's
//     server (plugin:subagent-fanout:claude-agent) connected: the plugin's
//     wrapper, bin/claude-agent-mcp, found the built binary on PATH;
//   - `claude -p /subagent-fanout:dashboard` sends the command's prompt; the
//     scripted model loads the server's claude_session_list through
//     ToolSearch (2.1.330 defers MCP tools), calls it — allowed by the
//     command's allowed-tools, with no --allowedTools given — and answers
//     with the dashboardUrl it returned (the plugin starts the server with
//     --ui on); this needs 2.1.330 (with an older CLI the test ends
//     skipped after the next step, failed under CI=true);
//   - without the binary on PATH, the plugin's SessionStart hook tells the
//     person and the model how to install it (pluginHookSays), and its
//     advice, followed, connects the server at the next start. Last: the
//     CLI then keeps the server's failure for 15 minutes.
// The host model sees the tools as mcp__plugin_<plugin>_<server>__<tool>.

import (
	"context"
	"encoding/json"
	"errors"
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
	claude, version := pluginCLI(t)
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

	// The marketplace by its absolute path, then by the README's command
	// from a clone, run as written in the checkout: the plugin is
	// installed from the latter.
	run(home, "plugin", "marketplace", "add", root)
	run(home, "plugin", "marketplace", "remove", marketplaceName)
	run(root, readmeCloneAdd(t, root)...)
	run(home, "plugin", "install", pluginName+"@"+marketplaceName)

	list := run(other, "mcp", "list")
	connected := regexp.MustCompile(`(?m)^plugin:` + pluginName + `:claude-agent: .*bin/claude-agent-mcp .*Connected`)
	if !connected.MatchString(list) {
		t.Fatalf("claude mcp list does not show the plugin's server connected:\n%s", list)
	}

	if claudeagent.CompareVersions(version, pluginMinVersion) < 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the CLI at %s is %s; the plugin's command needs %s or newer (CI=true)", claude, version, pluginMinVersion)
		}
		pluginHookSays(t, api, env, run, other)
		t.Skipf("installed, connected, and its hook heard; the plugin's command needs a CLI of %s or newer, not %s", pluginMinVersion, version)
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
	// Last: the CLI then keeps the server's failure for 15 minutes.
	pluginHookSays(t, api, env, run, other)
}

// pluginHookSays runs `claude -p` in dir without the server's binary on
// PATH: the plugin's SessionStart hook runs (a hook event of the stream
// whose output's systemMessage says how to install the binary) and its
// additionalContext reaches the model; then, as the message says, the
// file where the CLI keeps the failure is deleted, and with the binary
// the next start connects the server. When the wrapper finds a binary
// all the same (in $(go env GOPATH)/bin, say), it says so and checks
// nothing.
func pluginHookSays(t *testing.T, api *fakeapi.Server, env map[string]string, run func(dir string, args ...string) string, dir string) {
	t.Helper()
	withBin := env["PATH"]
	env["PATH"] = os.Getenv("PATH")
	defer func() { env["PATH"] = withBin }()
	root, err := e2eenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	check := exec.Command(filepath.Join(root, "plugin", "bin", "claude-agent-mcp"), "--plugin-check")
	check.Env = childEnv(env)
	if check.Run() == nil {
		t.Logf("the plugin's wrapper finds a claude-agent-mcp without the test's on PATH: its hook is not checked")
		return
	}
	api.SetHandler(nil)
	n := len(api.MessageRequests())
	stream := run(dir, "-p", "hello", "--output-format", "stream-json", "--verbose", "--include-hook-events")
	told := ""
	for _, line := range strings.Split(stream, "\n") {
		var ev struct {
			Subtype, Output string
			Event           string `json:"hook_event"`
		}
		var out struct {
			SystemMessage string `json:"systemMessage"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Subtype == "hook_response" && ev.Event == "SessionStart" &&
			json.Unmarshal([]byte(ev.Output), &out) == nil && out.SystemMessage != "" {
			told = out.SystemMessage
		}
	}
	if !strings.Contains(told, "go install github.com/claude-agent-mcp/claude-agent-mcp/cmd/claude-agent-mcp@latest") {
		t.Errorf("without the binary, no SessionStart hook event says how to install it (systemMessage %q):\n%s", told, stream)
	}
	heard := false
	for _, r := range api.MessageRequests()[n:] {
		heard = heard || r.IsMainConversation() && strings.Contains(string(r.Body), "cannot start, so its tools are missing")
	}
	if !heard {
		t.Errorf("without the binary, the hook's additionalContext did not reach the model")
	}
	// As told: with the binary installed and the file named deleted, the
	// next start connects the server (else the CLI skips it for 15 min).
	cache := regexp.MustCompile(`then delete (\S+) `).FindStringSubmatch(told)
	if cache == nil {
		t.Fatalf("the hook names no file to delete: %q", told)
	}
	if err := os.Remove(cache[1]); err != nil {
		t.Errorf("the file the hook names: %v", err)
	}
	env["PATH"] = withBin
	if init := run(dir, "-p", "hello", "--output-format", "stream-json", "--verbose"); !strings.Contains(init, `"name":"plugin:`+pluginName+`:claude-agent","status":"connected"`) {
		t.Errorf("after the hook's advice, the next start does not connect the plugin's server:\n%s", init)
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

// pluginCLI returns the CLI to install the plugin with, and its version.
func pluginCLI(t *testing.T) (claude, version string) {
	t.Helper()
	claude = e2eenv.FindClaude(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v, err := claudeagent.CLIVersion(ctx, claude)
	if err != nil {
		t.Fatalf("the CLI's version: %v", err)
	}
	return claude, v
}

// readmeCloneAdd is the README's command that adds the marketplace from a
// clone, in its directory, as arguments of claude.
func readmeCloneAdd(t *testing.T, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("from a clone, in its directory: `claude (plugin marketplace add [^`]+)`").FindSubmatch(b)
	if m == nil {
		t.Fatal("README.md has no \"from a clone, in its directory: `claude plugin marketplace add …`\"")
	}
	return strings.Fields(string(m[1]))
}

// TestPluginHook: the plugin's SessionStart hook by itself, as Claude Code
// runs it (hooks.json names it; CLAUDE_PLUGIN_ROOT set, the hook's input
// on stdin). With no claude-agent-mcp to find, it prints one JSON object
// whose systemMessage (shown to the person) is what the server entry's
// wrapper says on stderr when it cannot start the server, and whose
// additionalContext tells Claude the same; with one on PATH it prints
// nothing and starts nothing (the wrapper does start it). Both exit 0.
func TestPluginHook(t *testing.T) {
	root, err := e2eenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	plugin := filepath.Join(root, "plugin")
	if cmd := sessionStartHook(t, plugin); cmd != "${CLAUDE_PLUGIN_ROOT}/hooks/check-binary" {
		t.Fatalf("hooks.json runs %q at startup, not hooks/check-binary", cmd)
	}
	tools, home := scriptTools(t), t.TempDir()
	bin := t.TempDir()
	ran := filepath.Join(t.TempDir(), "ran")
	if err := os.WriteFile(filepath.Join(bin, "claude-agent-mcp"), []byte("#!/bin/sh\n: >'"+ran+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	hook, wrapper := filepath.Join(plugin, "hooks", "check-binary"), filepath.Join(plugin, "bin", "claude-agent-mcp")
	input := `{"hook_event_name":"SessionStart","source":"startup"}`

	_, says, code := runPluginScript(t, plugin, home, wrapper, "", tools)
	if code != 127 || !strings.Contains(says, "go install github.com/claude-agent-mcp/claude-agent-mcp/cmd/claude-agent-mcp@latest") ||
		!strings.Contains(says, "delete "+filepath.Join(home, ".claude", "mcp-needs-auth-cache.json")+" ") {
		t.Fatalf("the wrapper without a binary: exit %d, stderr %q", code, says)
	}
	out, errs, code := runPluginScript(t, plugin, home, hook, input, tools)
	var told struct {
		SystemMessage string `json:"systemMessage"`
		Specific      struct {
			Event   string `json:"hookEventName"`
			Context string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &told); err != nil || code != 0 {
		t.Fatalf("the hook without a binary: exit %d, %v, stdout %q, stderr %q", code, err, out, errs)
	}
	if told.SystemMessage != strings.TrimSpace(says) || told.Specific.Event != "SessionStart" || !strings.HasSuffix(told.Specific.Context, told.SystemMessage) {
		t.Errorf("the hook without a binary told %+v; the wrapper says %q", told, says)
	}

	if out, errs, code := runPluginScript(t, plugin, home, hook, input, bin, tools); out != "" || errs != "" || code != 0 {
		t.Errorf("the hook with a binary: exit %d, stdout %q, stderr %q; want 0 and nothing", code, out, errs)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("the hook started the binary")
	}
	if _, errs, code := runPluginScript(t, plugin, home, wrapper, "", bin, tools); code != 0 {
		t.Errorf("the wrapper with a binary: exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Errorf("the wrapper did not start the binary: %v", err)
	}
}

// sessionStartHook is the command the plugin's hooks.json runs at
// SessionStart on startup (its one hook).
func sessionStartHook(t *testing.T, plugin string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(plugin, "hooks", "hooks.json"))
	if err != nil {
		t.Fatal(err)
	}
	var config struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(raw, &config); err != nil {
		t.Fatalf("hooks.json: %v", err)
	}
	starts := config.Hooks["SessionStart"]
	if len(starts) != 1 || !strings.Contains(starts[0].Matcher, "startup") || len(starts[0].Hooks) != 1 || starts[0].Hooks[0].Type != "command" {
		t.Fatalf("hooks.json has no one command hook at SessionStart's startup: %s", raw)
	}
	return starts[0].Hooks[0].Command
}

// scriptTools is a directory of the programs the plugin's scripts call
// (links to them), to be alone on PATH: no claude-agent-mcp, no go.
func scriptTools(t *testing.T) string {
	t.Helper()
	tools := t.TempDir()
	for _, name := range []string{"sh", "sed", "tr", "dirname"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("no %s: %v", name, err)
		}
		if err := os.Symlink(p, filepath.Join(tools, name)); err != nil {
			t.Fatal(err)
		}
	}
	return tools
}

// runPluginScript runs a script of the plugin with dirs as PATH, HOME at
// home and CLAUDE_PLUGIN_ROOT: a hook given its input on stdin, or
// the wrapper (stdin "") given the server entry's arguments.
func runPluginScript(t *testing.T, plugin, home, path, stdin string, dirs ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(path)
	if stdin == "" {
		cmd.Args = append(cmd.Args, "--ui", "on")
	}
	cmd.Env = []string{"PATH=" + strings.Join(dirs, string(os.PathListSeparator)), "HOME=" + home, "CLAUDE_PLUGIN_ROOT=" + plugin}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s: %v", path, err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}
