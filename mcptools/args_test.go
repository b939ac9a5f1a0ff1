package mcptools

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/google/jsonschema-go/jsonschema"
)

// argCases are refused arguments of every tool, each with the whole error
// text: the parameter, the type it takes and what came, the nearest name.
// The SDK's validation said `validating "arguments": validating root:
// validating /properties/sessionId: type: <invalid reflect.Value> has type
// "null", want "string"` for the first, and listed 27 names for a
// misspelt option (issue 27).
var argCases = []struct {
	tool string
	args any
	want string
}{
	{"claude_chat_wait", map[string]any{"sessionId": nil}, `sessionId: expected a string, got null`},
	{"claude_chat_wait", map[string]any{}, `missing parameter "sessionId": claude_chat_wait needs it (a string)`},
	{"claude_session_create", map[string]any{"modle": "opus"}, `unknown parameter "modle" for claude_session_create (did you mean "model"?)`},
	{"claude_session_create", map[string]any{"cwd": nil}, `cwd: expected a string, got null (leave it out for the default)`},
	{"claude_session_create", map[string]any{"permissionMode": "accept"},
		`permissionMode: "accept" is not one of default, acceptEdits, plan, bypassPermissions, dontAsk, auto (did you mean "acceptEdits"?)`},
	{"claude_session_create", map[string]any{"tools": "Read"}, `tools: expected an array of strings, got the string "Read" (put it in a list: ["Read"])`},
	{"claude_session_create", map[string]any{"settingSources": []any{"users"}}, `settingSources[0]: "users" is not one of user, project, local (did you mean "user"?)`},
	{"claude_session_create", map[string]any{"mcpServers": map[string]any{"a": 1}}, `mcpServers["a"]: expected an object, got the number 1`},
	{"claude_session_create", map[string]any{"maxBudgetUsd": "1", "forkSession": "yes"},
		`forkSession: expected true or false, got the string "yes"; maxBudgetUsd: expected a number, got the string "1"`},
	{"claude_session_create", map[string]any{"worktree": true}, `worktree true: worktree is a string: a name, or "auto" for one the server picks (leave it out for none)`},
	{"claude_session_create", map[string]any{"xyz": 1}, `unknown parameter "xyz" for claude_session_create: it takes addDirs, agent, agents, allowedTools, appendSystemPrompt, cwd, disallowedTools, effort, fallbackModel, forkSession, jsonSchema, maxBudgetUsd, maxTurns, mcpServers, model, name, permissionMode, plugins, profile, resumeSessionId, settingSources, settings, settingsFile, strictMcpConfig, systemPrompt, tools, worktree`},
	{"claude_session_close", map[string]any{"sessionId": nil}, `sessionId: expected a string, got null`},
	{"claude_chat_query", map[string]any{"sesionId": "x", "prompt": "hi"},
		`unknown parameter "sesionId" for claude_chat_query (did you mean "sessionId"?); missing parameter "sessionId": claude_chat_query needs it (a string)`},
	{"claude_chat_query", map[string]any{"sessionId": "x", "prompt": "hi", "waitSeconds": 1.5}, `waitSeconds: expected a whole number, got the number 1.5`},
	{"claude_chat_query", map[string]any{"sessionId": "x", "prompt": "hi", "images": []any{map[string]any{"pth": "/a.png"}}},
		`images[0]: unknown field "pth" (did you mean "path"?)`},
	{"claude_chat_query", map[string]any{"sessionId": "x", "prompt": "hi", "images": []any{map[string]any{"path": 1}}}, `images[0].path: expected a string, got the number 1`},
	{"claude_chat_query", map[string]any{"sessionId": "x", "prompt": "hi", "onUsageLimit": "later"}, `onUsageLimit: "later" is not one of wait, fail`},
	{"claude_chat_interrupt", map[string]any{"sessionId": 3}, `sessionId: expected a string, got the number 3`},
	{"claude_chat_steer", map[string]any{"sessionId": "x", "mesage": "hi"},
		`unknown parameter "mesage" for claude_chat_steer (did you mean "message"?); missing parameter "message": claude_chat_steer needs it (a string)`},
	{"claude_chat_steer", map[string]any{"sessionId": "x", "message": "hi", "images": []any{"/a.png"}}, `images[0]: expected an object, got the string "/a.png"`},
	{"claude_chat_model", map[string]any{"sessionId": "x", "modle": "opus"},
		`unknown parameter "modle" for claude_chat_model (did you mean "model"?); missing parameter "model": claude_chat_model needs it (a string)`},
	{"claude_chat_mode", map[string]any{"sessionId": "x", "permissionMode": "plna"},
		`permissionMode: "plna" is not one of default, acceptEdits, plan, bypassPermissions, dontAsk, auto (did you mean "plan"?)`},
	{"claude_direct_query", map[string]any{"prompt": "hi", "maxTurns": "3"}, `maxTurns: expected a whole number, got the string "3"`},
	{"claude_direct_query", map[string]any{"prompt": "hi", "maxTurns": strings.Repeat("é", 25), "tools": strings.Repeat("x", 41)},
		`maxTurns: expected a whole number, got a string of 50 bytes; tools: expected an array of strings, got a string of 41 bytes (put it in a list)`},
	// claude_direct_query's schema lists no enumerations, but its calls are
	// checked with them: refused before the handler, no session opened.
	{"claude_direct_query", map[string]any{"prompt": "hi", "onUsageLimit": "wiat"}, `onUsageLimit: "wiat" is not one of wait, fail (did you mean "wait"?)`},
	{"claude_direct_query", map[string]any{"prompt": "hi", "permisionMode": "plan"}, `unknown parameter "permisionMode" for claude_direct_query (did you mean "permissionMode"?)`},
	{"claude_session_list", map[string]any{"sessionId": false}, `sessionId: expected a string, got false`},
	{"claude_session_list", []any{1}, `the arguments of claude_session_list must be an object of its parameters, got an array`},
	{"claude_session_history", map[string]any{"sessionId": "x", "limit": "3", "cursor": 5},
		`cursor: expected a string, got the number 5; limit: expected a whole number, got the string "3"`},
	{"claude_session_rewind", map[string]any{"sessionId": "x", "prompt": "2", "dryrun": true},
		`unknown parameter "dryrun" for claude_session_rewind (did you mean "dryRun"?); prompt: expected a whole number, got the string "2"`},
	{"claude_session_land", map[string]any{"sessionId": "x", "how": "sqash"}, `how: "sqash" is not one of fast-forward, merge, squash, pull-request, discard (did you mean "squash"?)`},
}

// TestArgumentErrors: every tool's refused arguments get the text of
// argCases, as a tool error, through a real client; nothing starts.
func TestArgumentErrors(t *testing.T) {
	t.Parallel()
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{})
	tools := map[string]bool{}
	for _, c := range argCases {
		tools[c.tool] = true
		res, _ := f.call(t, c.tool, c.args, nil)
		if got := resText(res); !res.IsError || got != c.want {
			t.Errorf("%s %v:\n got %s (isError %v)\nwant %s", c.tool, c.args, got, res.IsError, c.want)
		}
	}
	for _, tool := range Tools() {
		if !tools[tool.Name] {
			t.Errorf("no case for %s", tool.Name)
		}
	}
	if n := f.mgr.Count(); n != 0 {
		t.Errorf("refused calls made %d session(s)", n)
	}
}

// TestArgCheckKnowsEverySchemaKeyword: toolargs.Check understands every keyword
// of every input schema, so that nothing is left to the SDK's validation
// and its errors (a "minimum" or "pattern" added to a schema must be
// checked there first).
func TestArgCheckKnowsEverySchemaKeyword(t *testing.T) {
	t.Parallel()
	known := []string{"type", "description", "enum", "properties", "items", "required", "additionalProperties"}
	var walk func(where string, v any)
	walk = func(where string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !slices.Contains(known, k) {
				t.Errorf("%s has %q, which toolargs.Check does not check", where, k)
			}
		}
		for name, p := range mapOf(m["properties"]) {
			walk(where+"."+name, p)
		}
		walk(where+"[]", m["items"])
		walk(where+"{}", m["additionalProperties"])
	}
	schemas := map[string]*jsonschema.Schema{"agent tools": agentInputSchema()}
	for _, tool := range Tools() {
		schemas[tool.Name] = tool.InputSchema.(*jsonschema.Schema)
	}
	for name, s := range schemas {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		walk(name, v)
	}
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
