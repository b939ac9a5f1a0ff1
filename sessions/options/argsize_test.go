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
// too long as a whole; one byte under the limit passes. The options that
// carry text or documents are no part of the command line (initialize and
// files): 200 KB of systemPrompt, which once failed at the process's start
// with "argument list too long" (issue 27), now passes, and so do the
// others at any size.
func TestArgSizes(t *testing.T) {
	t.Parallel()
	linux := limitsFor("linux")
	text := func(n int) string { return strings.Repeat("x", n) }
	// obj is a JSON object of n bytes whose one string field is padded.
	obj := func(n int, head string) json.RawMessage {
		doc := fmt.Sprintf(`{%s"pad":""}`, head)
		return json.RawMessage(fmt.Sprintf(`{%s"pad":"%s"}`, head, text(n-len(doc))))
	}
	// rules is allowedTools of about n bytes on the command line.
	rules := func(n int) []string { return strings.Split(strings.Repeat("Bash(git:*),", n/12), ",") }
	max := MaxArgBytes
	for _, tc := range []struct {
		name    string
		o       CreateOptions
		lim     argLimits
		environ []string
		want    string // "" passes
	}{
		{"texts and documents of any size", CreateOptions{SessionOptions: claudeagent.SessionOptions{SystemPrompt: text(4 << 20), AppendSystemPrompt: text(4 << 20),
			JSONSchema: obj(3<<20, `"type":"object",`), Agents: json.RawMessage(`{"a":{"description":"d","prompt":"` + text(3<<20) + `"}}`), Settings: obj(3<<20, "")},
			MCPServers: map[string]json.RawMessage{"s": obj(3<<20, `"command":"x",`)}}, linux, nil, ""},
		{"allowedTools", CreateOptions{SessionOptions: claudeagent.SessionOptions{AllowedTools: rules(144000)}}, linux, nil,
			"allowedTools is 144000 bytes; the claude CLI takes at most 131071 bytes in one argument, 131056 of them for --allowedTools's value: pass fewer rules"},
		{"allowedTools at the limit", CreateOptions{SessionOptions: claudeagent.SessionOptions{AllowedTools: []string{text(max - len("--allowedTools="))}}}, linux, nil, ""},
		{"allowedTools one over", CreateOptions{SessionOptions: claudeagent.SessionOptions{AllowedTools: []string{text(max - len("--allowedTools=") + 1)}}}, linux, nil,
			"allowedTools is 131057 bytes; the claude CLI takes at most 131071 bytes in one argument"},
		{"disallowedTools", CreateOptions{SessionOptions: claudeagent.SessionOptions{DisallowedTools: rules(140000)}}, linux, nil,
			"disallowedTools is 139992 bytes; the claude CLI takes at most 131071 bytes in one argument"},
		{"several, each under the limit", CreateOptions{SessionOptions: claudeagent.SessionOptions{AllowedTools: rules(130000), DisallowedTools: rules(120000)}}, linux, nil, ""},
		{"the whole line with the environment", CreateOptions{SessionOptions: claudeagent.SessionOptions{AllowedTools: rules(130000), DisallowedTools: rules(120000)}},
			linux, []string{"BIG=" + text(1900000)}, "the options make a claude command line of about 2166"},
		{"the whole line names the longest options", CreateOptions{SessionOptions: claudeagent.SessionOptions{AllowedTools: rules(130000), DisallowedTools: rules(120000),
			Tools: rules(110000)}}, linux, []string{"BIG=" + text(1800000)},
			"with its arguments and the server's environment (1800013 bytes of it); ARG_MAX is 2097152 bytes: shorten the longest options: allowedTools (129996 bytes), disallowedTools (120000 bytes), tools (109992 bytes)"},
		{"the environment alone", CreateOptions{}, linux, []string{"BIG=" + text(2100000)}, "the server's environment leaves no room"},
		{"macOS: no limit per argument", CreateOptions{SessionOptions: claudeagent.SessionOptions{AllowedTools: rules(200000)}}, limitsFor("darwin"), nil, ""},
		{"macOS: 1 MiB in all", CreateOptions{SessionOptions: claudeagent.SessionOptions{AllowedTools: rules(600000), DisallowedTools: rules(500000)}}, limitsFor("darwin"), nil,
			"ARG_MAX is 1048576 bytes: shorten the longest options: allowedTools (600000 bytes), disallowedTools (499992 bytes)"},
		{"another system: not checked", CreateOptions{SessionOptions: claudeagent.SessionOptions{AllowedTools: rules(4 << 20)}}, limitsFor("freebsd"), nil, ""},
		{"Windows: 32767 characters", CreateOptions{SessionOptions: claudeagent.SessionOptions{AllowedTools: []string{strings.Repeat("é", 20000)}}}, limitsFor("windows"), []string{"BIG=" + text(100000)}, ""},
		{"Windows: quotes count twice", CreateOptions{SessionOptions: claudeagent.SessionOptions{AllowedTools: []string{strings.Repeat(`"`, 17000)}}}, limitsFor("windows"), nil,
			"characters with its arguments; the longest command line Windows takes is 32767 characters: shorten the longest options: allowedTools (17000 bytes)"},
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
// an option too long for the command line of this system, and takes 2 MiB
// of systemPrompt, which goes by initialize.
func TestValidateChecksArgSizes(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 2<<20)
	if err := Validate(&CreateOptions{Cwd: t.TempDir(), SessionOptions: claudeagent.SessionOptions{SystemPrompt: big}}); err != nil {
		t.Errorf("Validate with 2 MiB of systemPrompt = %v", err)
	}
	o := CreateOptions{Cwd: t.TempDir(), SessionOptions: claudeagent.SessionOptions{AllowedTools: []string{big}}}
	err := Validate(&o)
	if limitsFor(runtime.GOOS).total == 0 {
		if err != nil {
			t.Errorf("Validate on %s, whose limits are not known = %v", runtime.GOOS, err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), "allowedTools is 2097152 bytes") && !strings.Contains(err.Error(), "allowedTools (2097152 bytes)") {
		t.Errorf("Validate with 2 MiB of allowedTools on %s = %v", runtime.GOOS, err)
	}
}
