package options

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
)

// TestArgSizes: an option too long for one argument of the CLI's command
// line is refused naming the option and the limit, as is a command line
// too long as a whole; one byte under the limit passes (issue 27: 200 KB
// of systemPrompt failed at the process's start with "argument list too
// long").
func TestArgSizes(t *testing.T) {
	t.Parallel()
	linux := limitsFor("linux")
	text := func(n int) string { return strings.Repeat("x", n) }
	// obj is a JSON object of n bytes whose one string field is padded.
	obj := func(n int, head string) json.RawMessage {
		doc := fmt.Sprintf(`{%s"pad":""}`, head)
		return json.RawMessage(fmt.Sprintf(`{%s"pad":"%s"}`, head, text(n-len(doc))))
	}
	max := MaxArgBytes
	for _, tc := range []struct {
		name    string
		o       CreateOptions
		lim     argLimits
		environ []string
		want    string // "" passes
	}{
		{"systemPrompt 200000", CreateOptions{SessionOptions: claudeagent.SessionOptions{SystemPrompt: text(200000)}}, linux, nil,
			"systemPrompt is 200000 bytes; the claude CLI takes at most 131071 bytes in one argument, 131055 of them for --system-prompt's value: shorten it"},
		{"systemPrompt at the limit", CreateOptions{SessionOptions: claudeagent.SessionOptions{SystemPrompt: text(max - len("--system-prompt="))}}, linux, nil, ""},
		{"systemPrompt one over", CreateOptions{SessionOptions: claudeagent.SessionOptions{SystemPrompt: text(max - len("--system-prompt=") + 1)}}, linux, nil,
			"systemPrompt is 131056 bytes; the claude CLI takes at most 131071 bytes in one argument"},
		{"appendSystemPrompt", CreateOptions{SessionOptions: claudeagent.SessionOptions{AppendSystemPrompt: text(140000)}}, linux, nil,
			"appendSystemPrompt is 140000 bytes; the claude CLI takes at most 131071 bytes in one argument, 131048 of them for --append-system-prompt's value"},
		{"jsonSchema", CreateOptions{SessionOptions: claudeagent.SessionOptions{JSONSchema: obj(150000, `"type":"object",`)}}, linux, nil,
			"jsonSchema is 150000 bytes; the claude CLI takes at most 131071 bytes in one argument"},
		{"an agent's prompt", CreateOptions{SessionOptions: claudeagent.SessionOptions{Agents: json.RawMessage(`{"a":{"description":"d","prompt":"` + text(140000) + `"}}`)}}, linux, nil,
			"agents is 140037 bytes; the claude CLI takes at most 131071 bytes in one argument, 131062 of them for --agents's value: shorten the agents' prompts"},
		{"settings", CreateOptions{SessionOptions: claudeagent.SessionOptions{Settings: obj(131072, "")}}, linux, nil,
			"settings is 131072 bytes; the claude CLI takes at most 131071 bytes in one argument, 131060 of them for --settings's value: pass them in a file with settingsFile"},
		{"mcpServers", CreateOptions{MCPServers: map[string]json.RawMessage{"s": obj(140000, `"command":"x",`)}}, linux, nil,
			"mcpServers is 140021 bytes; the claude CLI takes at most 131071 bytes in one argument"},
		{"allowedTools", CreateOptions{SessionOptions: claudeagent.SessionOptions{AllowedTools: strings.Split(strings.Repeat("Bash(git:*),", 12000), ",")}}, linux, nil,
			"allowedTools is 144000 bytes; the claude CLI takes at most 131071 bytes in one argument"},
		{"several, each under the limit", CreateOptions{SessionOptions: claudeagent.SessionOptions{SystemPrompt: text(130000), AppendSystemPrompt: text(120000),
			JSONSchema: obj(110000, `"type":"object",`), Settings: obj(100000, "")}}, linux, nil, ""},
		{"the whole line with the environment", CreateOptions{SessionOptions: claudeagent.SessionOptions{SystemPrompt: text(130000), AppendSystemPrompt: text(120000),
			JSONSchema: obj(110000, `"type":"object",`)}}, linux, []string{"BIG=" + text(1800000)},
			"the options make a claude command line of about 2176"},
		{"the whole line names the longest options", CreateOptions{SessionOptions: claudeagent.SessionOptions{SystemPrompt: text(130000), AppendSystemPrompt: text(120000),
			JSONSchema: obj(110000, `"type":"object",`), Settings: obj(100000, "")}}, linux, []string{"BIG=" + text(1700000)},
			"with its arguments and the server's environment (1700013 bytes of it); ARG_MAX is 2097152 bytes: shorten the longest options: systemPrompt (130000 bytes), appendSystemPrompt (120000 bytes), jsonSchema (110000 bytes)"},
		{"the environment alone", CreateOptions{}, linux, []string{"BIG=" + text(2100000)}, "the server's environment leaves no room"},
		{"macOS: no limit per argument", CreateOptions{SessionOptions: claudeagent.SessionOptions{SystemPrompt: text(200000)}}, limitsFor("darwin"), nil, ""},
		{"macOS: 1 MiB in all", CreateOptions{SessionOptions: claudeagent.SessionOptions{SystemPrompt: text(600000), AppendSystemPrompt: text(500000)}}, limitsFor("darwin"), nil,
			"ARG_MAX is 1048576 bytes: shorten the longest options: systemPrompt (600000 bytes), appendSystemPrompt (500000 bytes)"},
		{"another system: not checked", CreateOptions{SessionOptions: claudeagent.SessionOptions{SystemPrompt: text(4 << 20)}}, limitsFor("freebsd"), nil, ""},
		{"Windows: 32767 characters", CreateOptions{SessionOptions: claudeagent.SessionOptions{SystemPrompt: strings.Repeat("é", 20000)}}, limitsFor("windows"), []string{"BIG=" + text(100000)}, ""},
		{"Windows: quotes count twice", CreateOptions{SessionOptions: claudeagent.SessionOptions{SystemPrompt: strings.Repeat(`"`, 17000)}}, limitsFor("windows"), nil,
			"characters with its arguments; the longest command line Windows takes is 32767 characters: shorten the longest options: systemPrompt (17000 bytes)"},
	} {
		err := checkArgSizes(&tc.o, tc.lim, tc.environ)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestValidateChecksArgSizes: Validate, which every create runs, refuses
// an option too long for the command line of this system.
func TestValidateChecksArgSizes(t *testing.T) {
	t.Parallel()
	o := CreateOptions{Cwd: t.TempDir(), SessionOptions: claudeagent.SessionOptions{SystemPrompt: strings.Repeat("x", 2<<20)}}
	err := Validate(&o)
	if limitsFor(runtime.GOOS).total == 0 {
		if err != nil {
			t.Errorf("Validate on %s, whose limits are not known = %v", runtime.GOOS, err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), "systemPrompt is 2097152 bytes") && !strings.Contains(err.Error(), "systemPrompt (2097152 bytes)") {
		t.Errorf("Validate with 2 MiB of systemPrompt on %s = %v", runtime.GOOS, err)
	}
}
