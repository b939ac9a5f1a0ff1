package claudeagent

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A CLI's command line and environment (Options.Args, Options.Environ).

func TestOptionsArgs(t *testing.T) {
	t.Parallel()
	base := []string{"--output-format", "stream-json", "--input-format", "stream-json", "--verbose"}
	for _, tc := range []struct {
		name string
		opts Options
		want []string
	}{
		{"zero", Options{}, nil},
		{"model", Options{SessionOptions: SessionOptions{Model: "sonnet"}}, []string{"--model=sonnet"}},
		{"permission_mode", Options{SessionOptions: SessionOptions{PermissionMode: "plan"}}, []string{"--permission-mode=plan"}},
		// Text goes by initialize, never on the command line.
		{"system_prompt", Options{SessionOptions: SessionOptions{SystemPrompt: "be brief"}}, nil},
		{"append_system_prompt", Options{SessionOptions: SessionOptions{AppendSystemPrompt: "and kind"}}, nil},
		{"allowed_tools", Options{SessionOptions: SessionOptions{AllowedTools: []string{"Read", "Bash(git:*)"}}}, []string{"--allowedTools=Read,Bash(git:*)"}},
		{"disallowed_tools", Options{SessionOptions: SessionOptions{DisallowedTools: []string{"Write"}}}, []string{"--disallowedTools=Write"}},
		{"max_turns", Options{SessionOptions: SessionOptions{MaxTurns: 3}}, []string{"--max-turns=3"}},
		{"max_turns_negative", Options{SessionOptions: SessionOptions{MaxTurns: -1}}, nil},
		{"resume", Options{Resume: "-abc"}, []string{"--resume=-abc"}},
		{"fork", Options{Resume: "abc", ForkSession: true}, []string{"--resume=abc", "--fork-session"}},
		{"session_id", Options{SessionID: "u-1"}, []string{"--session-id=u-1"}},
		// A document is a file of the process's private directory (its
		// name alone before the start).
		{"mcp_config", Options{MCPConfig: `{"mcpServers":{}}`, StrictMCPConfig: true}, []string{"--mcp-config=mcp-config.json", "--strict-mcp-config"}},
		{"mcp_config_file", Options{MCPConfig: "/etc/mcp.json"}, []string{"--mcp-config=/etc/mcp.json"}},
		{"add_dirs", Options{SessionOptions: SessionOptions{AddDirs: []string{"/a", "/b"}}}, []string{"--add-dir=/a", "--add-dir=/b"}},
		{"tools", Options{SessionOptions: SessionOptions{Tools: []string{"Read", "Grep"}}}, []string{"--tools=Read,Grep"}},
		{"no_tools", Options{SessionOptions: SessionOptions{Tools: []string{}}}, []string{"--tools="}},
		{"effort", Options{SessionOptions: SessionOptions{Effort: "high"}}, []string{"--effort=high"}},
		{"json_schema", Options{SessionOptions: SessionOptions{JSONSchema: json.RawMessage(`{ "type": "object" }`)}}, nil},
		{"budget", Options{SessionOptions: SessionOptions{MaxBudgetUSD: 0.25}}, []string{"--max-budget-usd=0.25"}},
		{"agents", Options{SessionOptions: SessionOptions{Agents: json.RawMessage(`{"r":{"description":"d","prompt":"p"}}`)}}, nil},
		{"settings_object", Options{SessionOptions: SessionOptions{Settings: json.RawMessage(`{"model": "x"}`)}}, []string{"--settings=settings.json"}},
		{"settings_file", Options{SessionOptions: SessionOptions{SettingsFile: "/etc/s.json"}}, []string{"--settings=/etc/s.json"}},
		{"settings_file_persisted", Options{SessionOptions: SessionOptions{Settings: json.RawMessage(`"/etc/s.json"`)}}, []string{"--settings=/etc/s.json"}},
		{"setting_sources", Options{SessionOptions: SessionOptions{SettingSources: []string{"user", "project"}}}, []string{"--setting-sources=user,project"}},
		{"no_setting_sources", Options{SessionOptions: SessionOptions{SettingSources: []string{}}}, []string{"--setting-sources="}},
		{"fallback", Options{SessionOptions: SessionOptions{FallbackModel: "haiku"}}, []string{"--fallback-model=haiku"}},
		{"agent", Options{SessionOptions: SessionOptions{Agent: "reviewer"}}, []string{"--agent=reviewer"}},
		{"name", Options{SessionOptions: SessionOptions{Name: "-reviewer"}}, []string{"--name=-reviewer"}},
		{"partial", Options{IncludePartialMessages: true}, []string{"--include-partial-messages"}},
		{"stdio", Options{PermissionPromptStdio: true}, []string{"--permission-prompt-tool", "stdio"}},
		{"allow_bypass", Options{AllowDangerouslySkipPermissions: true}, []string{"--allow-dangerously-skip-permissions"}},
		{"extra", Options{ExtraArgs: []string{"--effort=high"}}, []string{"--effort=high"}},
		{"not_flags", Options{Path: "/x", Cwd: "/y", Env: map[string]string{"A": "b"}, MaxLineBytes: 5,
			ControlTimeout: time.Second, CloseTimeout: time.Second, StderrLines: 3}, nil},
		{"order", Options{SessionOptions: SessionOptions{Model: "m", MaxTurns: 1}, PermissionPromptStdio: true, ExtraArgs: []string{"--x"}},
			[]string{"--model=m", "--max-turns=1", "--permission-prompt-tool", "stdio", "--x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.opts.Args()
			want := append(append([]string(nil), base...), tc.want...)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Args() =\n %q\nwant\n %q", got, want)
			}
		})
	}
}

// TestOptionsEnviron: a CLI gets an allow-list of the server's
// environment (what it needs: paths, locale, its credentials and
// settings), never a variable of the server's own (CLAUDE_AGENT_MCP_*,
// its token among them), not even through Env; CLAUDECODE is dropped;
// CLAUDE_CODE_ENTRYPOINT and PWD are set; Env wins over the rest.
func TestOptionsEnviron(t *testing.T) {
	t.Setenv("CLAUDECODE", "1")
	t.Setenv("CLAUDE_CODE_ENTRYPOINT", "sdk-py")
	t.Setenv("PWD", "/somewhere/else")
	t.Setenv("LANG", "kept")
	t.Setenv("ANTHROPIC_API_KEY", "kept")
	t.Setenv("CLAUDE_CODE_USE_BEDROCK", "kept")
	t.Setenv("CLAUDE_AGENT_MCP_TOKEN", "secret")
	t.Setenv("CLAUDE_AGENT_MCP_STORE", "postgres://agent:secret@db/agent")
	t.Setenv("DATABASE_URL", "postgres://agent:secret@db/agent")
	t.Setenv("SSH_AUTH_SOCK", "/run/agent.sock")
	t.Setenv("GITHUB_TOKEN", "secret")

	parse := func(env []string) map[string]string {
		t.Helper()
		m := map[string]string{}
		for _, kv := range env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Errorf("malformed entry %q", kv)
			}
			if _, dup := m[k]; dup {
				t.Errorf("duplicate key %s", k)
			}
			m[k] = v
		}
		return m
	}
	o := Options{Env: map[string]string{"LANG": "new", "EXTRA": "x", "CLAUDE_AGENT_MCP_TOKEN": "smuggled"}}
	env := parse(o.Environ("/work/dir"))
	for _, k := range []string{"CLAUDECODE", "CLAUDE_AGENT_MCP_TOKEN", "CLAUDE_AGENT_MCP_STORE", "DATABASE_URL", "SSH_AUTH_SOCK", "GITHUB_TOKEN"} {
		if v, ok := env[k]; ok {
			t.Errorf("%s=%s reached the CLI", k, v)
		}
	}
	for k, want := range map[string]string{
		"CLAUDE_CODE_ENTRYPOINT":  Entrypoint,
		"PWD":                     "/work/dir",
		"ANTHROPIC_API_KEY":       "kept",
		"CLAUDE_CODE_USE_BEDROCK": "kept",
		"LANG":                    "new",
		"EXTRA":                   "x",
	} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	for k := range env {
		if strings.HasPrefix(k, "CLAUDE_AGENT_MCP_") {
			t.Errorf("%s reached the CLI", k)
		}
	}
	if Entrypoint != "claude-agent-mcp" {
		t.Errorf("Entrypoint = %q", Entrypoint)
	}
	// Env wins over the defaults too.
	o = Options{Env: map[string]string{"CLAUDE_CODE_ENTRYPOINT": "mine", "PWD": "/p"}}
	if env := parse(o.Environ("/work/dir")); env["CLAUDE_CODE_ENTRYPOINT"] != "mine" || env["PWD"] != "/p" {
		t.Errorf("Env did not win: %v %v", env["CLAUDE_CODE_ENTRYPOINT"], env["PWD"])
	}
	// No cwd: no PWD (the server's is not the CLI's).
	if env := parse((&Options{}).Environ("")); env["PWD"] != "" {
		t.Errorf("PWD = %q", env["PWD"])
	}
}
