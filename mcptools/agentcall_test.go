package mcptools

import (
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// wantRefused checks that res is a tool error whose text holds every want.
func wantRefused(t *testing.T, what string, res *mcp.CallToolResult, wants ...string) {
	t.Helper()
	text := resText(res)
	if !res.IsError {
		t.Errorf("%s: not refused: %s", what, text)
		return
	}
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s: the refusal %q does not say %q", what, text, w)
		}
	}
}

// TestAgentToolsRun: a call runs a session as the agent (--agents with its
// definition alone, --agent naming it), returns claude_chat_query's result
// with the sessionId; the same tool continues the conversation in the same
// process; other tools are refused the session and it is refused theirs.
func TestAgentToolsRun(t *testing.T) {
	e := newAgentEnv(t)
	writeAgent(t, e.project, "reviewer.md", "You are REVIEWER-PROMPT.", "name: reviewer", "description: Reviews code", "tools: Read, Grep", "model: haiku")
	writeAgent(t, e.project, "tester.md", "You run tests.", "name: tester", "description: Runs tests")
	e.serve(t, "2025-11-25", sessions.Config{}, 0)
	cwd := t.TempDir()

	res, out := e.call(t, "reviewer", map[string]any{"prompt": "hi", "cwd": cwd}, nil)
	if res.IsError || out["finalText"] != "Hello from fake API (n_messages=1)" || out["status"] != "completed" {
		t.Fatalf("reviewer: %s %v", resText(res), out)
	}
	sid, _ := out["sessionId"].(string)
	starts := e.starts(t)
	if len(starts) != 1 {
		t.Fatalf("%d CLI starts, want 1", len(starts))
	}
	args := starts[0]
	if v, _ := flagOf(args, "--agent"); v != "reviewer" {
		t.Errorf("--agent = %q in %q", v, args)
	}
	def := definitionOf(t, args, "reviewer")
	if def["prompt"] != "You are REVIEWER-PROMPT." || def["model"] != "haiku" || !reflect.DeepEqual(def["tools"], []any{"Read", "Grep"}) || def["description"] != "Reviews code" {
		t.Errorf("the definition passed = %v", def)
	}
	s, err := e.mgr.Get(sid)
	if err != nil {
		t.Fatal(err)
	}
	if in := s.Info(); in.AgentTool != "reviewer" || in.Cwd != cwd {
		t.Errorf("session info: agent tool %q, cwd %q", in.AgentTool, in.Cwd)
	}

	res, out = e.call(t, "reviewer", map[string]any{"prompt": "again", "sessionId": sid}, nil)
	if res.IsError || out["sessionId"] != sid || out["finalText"] != "Hello from fake API (n_messages=1)" {
		t.Errorf("continuing: %s %v", resText(res), out)
	}
	if n := len(e.starts(t)); n != 1 {
		t.Errorf("continuing started %d more CLI(s), want the same process", n-1)
	}
	if q := s.Info().Queries; q != 2 {
		t.Errorf("the session has %d queries, want 2", q)
	}
	_, list := e.call(t, "claude_session_list", map[string]any{"sessionId": sid}, nil)
	if got := list["sessions"].([]any)[0].(map[string]any)["agentTool"]; got != "reviewer" {
		t.Errorf("claude_session_list says agentTool %v", got)
	}

	_, created := e.call(t, "claude_session_create", map[string]any{"cwd": cwd}, nil)
	plain, _ := created["sessionId"].(string)
	for _, c := range []struct {
		what, tool string
		args       map[string]any
		wants      []string
	}{
		{"another agent tool's session", "tester", map[string]any{"prompt": "x", "sessionId": sid}, []string{"started by the agent tool reviewer, not tester", "continue it with reviewer"}},
		{"a plain session", "reviewer", map[string]any{"prompt": "x", "sessionId": plain}, []string{"not started by reviewer", "claude_chat_query"}},
		{"an unknown session", "reviewer", map[string]any{"prompt": "x", "sessionId": "nope"}, []string{"no open session has id", "omit sessionId to start a new conversation with reviewer"}},
		{"options of a started conversation", "reviewer", map[string]any{"prompt": "x", "sessionId": sid, "permissionMode": "plan", "cwd": cwd}, []string{"cwd, permissionMode cannot change in a conversation"}},
		{"claude_chat_query", "claude_chat_query", map[string]any{"prompt": "x", "sessionId": sid}, []string{"only that tool continues it", "claude_chat_query does not take it", "call reviewer"}},
		{"claude_chat_mode", "claude_chat_mode", map[string]any{"permissionMode": "bypassPermissions", "sessionId": sid}, []string{"claude_chat_mode does not take it"}},
		{"claude_chat_model", "claude_chat_model", map[string]any{"model": "opus", "sessionId": sid}, []string{"claude_chat_model does not take it"}},
		{"an unknown argument", "reviewer", map[string]any{"prompt": "x", "model": "opus"}, []string{`unknown parameter "model" for reviewer`}},
		{"an empty prompt", "reviewer", map[string]any{"prompt": " "}, []string{"prompt is empty"}},
	} {
		res, _ := e.call(t, c.tool, c.args, nil)
		wantRefused(t, c.what, res, c.wants...)
	}
	if q := s.Info().Queries; q != 2 {
		t.Errorf("after the refusals the session has %d queries, want 2", q)
	}
	if n := e.mgr.Count(); n != 2 {
		t.Errorf("%d sessions open, want the agent's and the plain one", n)
	}
}

// TestAgentToolsOverrides: each override that would widen the agent's
// session is refused with the reason, and nothing starts; overrides that
// tighten are applied to the session and to the definition passed.
func TestAgentToolsOverrides(t *testing.T) {
	e := newAgentEnv(t)
	writeFile(t, e.file, `strict:
  description: A strict agent
  prompt: Be strict.
  tools: [Read, Grep, Glob]
  disallowedTools: [WebFetch]
  effort: medium
  maxBudgetUsd: 1
  permissionMode: acceptEdits
`)
	writeAgent(t, e.project, "free.md", "Be free.", "name: free", "description: No settings")
	writeAgent(t, e.project, "counted.md", "P.", "name: counted", "description: Numeric effort", "effort: 5000")
	e.serve(t, "2025-11-25", sessions.Config{}, 0)
	cwd := t.TempDir()
	for _, c := range []struct {
		tool  string
		args  map[string]any
		wants []string
	}{
		{"strict", map[string]any{"effort": "high"}, []string{`effort "high" is refused`, "runs at effort medium", "use low, medium"}},
		{"strict", map[string]any{"maxBudgetUsd": 2}, []string{"maxBudgetUsd 2 is refused", "at most $1"}},
		{"strict", map[string]any{"maxBudgetUsd": -1}, []string{"invalid maxBudgetUsd"}},
		{"strict", map[string]any{"tools": []string{"Read", "Bash"}}, []string{`tools entry "Bash" is refused`, "Read, Grep, Glob"}},
		{"strict", map[string]any{"permissionMode": "auto"}, []string{`permissionMode "auto" is refused`, "acceptEdits", "use plan, dontAsk, default, acceptEdits"}},
		{"strict", map[string]any{"permissionMode": "bypassPermissions"}, []string{`permissionMode "bypassPermissions" is refused`}},
		{"strict", map[string]any{"permissionMode": "yolo"}, []string{"permissionMode"}},
		{"free", map[string]any{"permissionMode": "acceptEdits"}, []string{"more permissive than the agent \"free\"'s default"}},
		{"free", map[string]any{"effort": "extreme"}, []string{"invalid effort"}},
		{"counted", map[string]any{"effort": "low"}, []string{"sets its effort as a number (5000)"}},
	} {
		c.args["prompt"], c.args["cwd"] = "hi", cwd
		res, _ := e.call(t, c.tool, c.args, nil)
		wantRefused(t, c.tool+" "+resText(res), res, c.wants...)
	}
	if n, starts := e.mgr.Count(), len(e.starts(t)); n != 0 || starts != 0 {
		t.Fatalf("refused calls made %d session(s) and started %d CLI(s)", n, starts)
	}

	res, _ := e.call(t, "strict", map[string]any{"prompt": "hi", "cwd": cwd, "effort": "low", "maxBudgetUsd": 0.5,
		"tools": []string{"Read"}, "disallowedTools": []string{"Bash"}, "permissionMode": "plan"}, nil)
	if res.IsError {
		t.Fatalf("tightening: %s", resText(res))
	}
	args := e.starts(t)[0]
	for flag, want := range map[string]string{"--effort": "low", "--max-budget-usd": "0.5", "--permission-mode": "plan", "--disallowedTools": "Bash", "--agent": "strict"} {
		if v, _ := flagOf(args, flag); v != want {
			t.Errorf("%s = %q, want %q (%q)", flag, v, want, args)
		}
	}
	def := definitionOf(t, args, "strict")
	if !reflect.DeepEqual(def["tools"], []any{"Read"}) || !reflect.DeepEqual(def["disallowedTools"], []any{"WebFetch", "Bash"}) {
		t.Errorf("the definition passed = %v", def)
	}
	// Without overrides the operator entry's options apply.
	e.call(t, "strict", map[string]any{"prompt": "hi", "cwd": cwd}, nil)
	args = e.starts(t)[1]
	for flag, want := range map[string]string{"--effort": "medium", "--max-budget-usd": "1", "--permission-mode": "acceptEdits"} {
		if v, _ := flagOf(args, flag); v != want {
			t.Errorf("no overrides: %s = %q, want %q", flag, v, want)
		}
	}
	// An agent that sets nothing takes any effort and tools, and stricter modes.
	res, _ = e.call(t, "free", map[string]any{"prompt": "hi", "cwd": cwd, "effort": "max", "tools": []string{"Bash"}, "permissionMode": "dontAsk"}, nil)
	if res.IsError {
		t.Errorf("free: %s", resText(res))
	}
	if def := definitionOf(t, e.starts(t)[2], "free"); !reflect.DeepEqual(def["tools"], []any{"Bash"}) {
		t.Errorf("free: the definition passed = %v", def)
	}
}

// TestAgentToolsKeepDefinition: a session keeps the definition it started
// with when its agent file changes, also when its process is restarted
// (here: made dormant by --max-live 1 and resumed).
func TestAgentToolsKeepDefinition(t *testing.T) {
	e := newAgentEnv(t)
	writeAgent(t, e.project, "reviewer.md", "PROMPT-ONE.", "name: reviewer", "description: Reviews code")
	e.serve(t, "2025-11-25", sessions.Config{MaxLive: 1}, 0)
	cwd := t.TempDir()
	_, out := e.call(t, "reviewer", map[string]any{"prompt": "hi", "cwd": cwd}, nil)
	first, _ := out["sessionId"].(string)
	writeAgent(t, e.project, "reviewer.md", "PROMPT-TWO.", "name: reviewer", "description: Reviews code")
	if !e.agents.Rescan() {
		t.Fatal("the change was not seen")
	}
	_, out = e.call(t, "reviewer", map[string]any{"prompt": "hi", "cwd": cwd}, nil)
	if second, _ := out["sessionId"].(string); second == first || second == "" {
		t.Fatalf("second session %q", second)
	}
	res, out := e.call(t, "reviewer", map[string]any{"prompt": "again", "sessionId": first}, nil)
	if res.IsError || out["sessionId"] != first {
		t.Fatalf("continuing the first session: %s", resText(res))
	}
	starts := e.starts(t)
	if len(starts) != 3 {
		t.Fatalf("%d CLI starts, want 3 (the first session resumed)", len(starts))
	}
	for i, want := range []string{"PROMPT-ONE.", "PROMPT-TWO.", "PROMPT-ONE."} {
		if got := definitionOf(t, starts[i], "reviewer")["prompt"]; got != want {
			t.Errorf("start %d: prompt %q, want %q", i+1, got, want)
		}
	}
	if _, resumed := flagOf(starts[2], "--resume"); !resumed {
		t.Errorf("the third start is not a resume: %q", starts[2])
	}
}

// TestAgentToolsNames: an agent whose name the CLI would refuse as
// --agent runs under its tool name.
func TestAgentToolsNames(t *testing.T) {
	e := newAgentEnv(t)
	writeAgent(t, e.project, "spaced.md", "P.", "name: _code reviewer", "description: Spaced name")
	e.serve(t, "2025-11-25", sessions.Config{}, 0)
	res, _ := e.call(t, "_code_reviewer", map[string]any{"prompt": "hi", "cwd": t.TempDir()}, nil)
	if res.IsError {
		t.Fatalf("%s", resText(res))
	}
	args := e.starts(t)[0]
	if v, _ := flagOf(args, "--agent"); v != "code_reviewer" {
		t.Errorf("--agent = %q", v)
	}
	definitionOf(t, args, "code_reviewer")
}

// TestAgentToolsRemote: over HTTP the options of an operator's agent need
// no --http-allow (the ceilings still apply), a project agent's do, and
// so does a caller's override.
func TestAgentToolsRemote(t *testing.T) {
	e := newAgentEnv(t)
	plugin := t.TempDir()
	writeFile(t, e.file, `ops:
  description: The operator's agent
  prompt: Operate.
  permissionMode: auto
  mcpServers:
    local: {command: /bin/true}
  plugins: [`+plugin+`]
`)
	writeAgent(t, e.project, "proj.md", "P.", "name: proj", "description: A project's agent", "permissionMode: auto")
	e.serve(t, "2025-11-25", sessions.Config{Remote: true}, 0)
	cwd, err := os.Getwd() // the server's: no --http-allow needed for it
	if err != nil {
		t.Fatal(err)
	}
	res, _ := e.call(t, "ops", map[string]any{"prompt": "hi"}, nil)
	if res.IsError {
		t.Fatalf("the operator's agent over HTTP: %s", resText(res))
	}
	args := e.starts(t)[0]
	if v, _ := flagOf(args, "--plugin-dir"); v != plugin {
		t.Errorf("--plugin-dir = %q", v)
	}
	if v, _ := flagOf(args, "file:--mcp-config"); !strings.Contains(v, "/bin/true") {
		t.Errorf("the --mcp-config file the CLI read = %q (%q)", v, args)
	}
	res, _ = e.call(t, "ops", map[string]any{"prompt": "hi", "permissionMode": "acceptEdits"}, nil)
	wantRefused(t, "a caller's mode over HTTP", res, "permissionMode acceptEdits is off over HTTP")
	res, _ = e.call(t, "proj", map[string]any{"prompt": "hi", "cwd": cwd}, nil)
	wantRefused(t, "a project agent's mode over HTTP", res, `agents["proj"].permissionMode auto is off over HTTP`)
	if n := len(e.starts(t)); n != 1 {
		t.Errorf("refused calls started %d CLI(s)", n-1)
	}
	if !slices.Contains(sessions.HTTPAllowNames(), "widens-permissions") {
		t.Error("the refusal's flag value is gone")
	}
}

// TestAgentToolArgumentErrors: an agent tool's arguments are checked alike
// (its handler decodes them itself: the SDK checks nothing for it).
func TestAgentToolArgumentErrors(t *testing.T) {
	e := newAgentEnv(t)
	writeAgent(t, e.project, "reviewer.md", "You review.", "name: reviewer", "description: Reviews code")
	e.serve(t, "2025-11-25", sessions.Config{}, 0)
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"prompt": nil}, `prompt: expected a string, got null`},
		{map[string]any{}, `missing parameter "prompt": reviewer needs it (a string)`},
		{map[string]any{"prompt": "x", "efort": "low"}, `unknown parameter "efort" for reviewer (did you mean "effort"?)`},
		{map[string]any{"prompt": "x", "tools": "Read"}, `tools: expected an array of strings, got the string "Read" (put it in a list: ["Read"])`},
		{map[string]any{"prompt": "x", "waitSeconds": "5"}, `waitSeconds: expected a whole number, got the string "5"`},
	} {
		res, _ := e.call(t, "reviewer", c.args, nil)
		if got := resText(res); !res.IsError || got != c.want {
			t.Errorf("reviewer %v:\n got %s (isError %v)\nwant %s", c.args, got, res.IsError, c.want)
		}
	}
	if n := len(e.starts(t)); n != 0 {
		t.Errorf("refused calls started %d CLI(s)", n)
	}
}

// TestOptionTooLongForOneArgument: an option longer than the CLI takes in
// one argument is refused when the session is created, naming the option
// and the limit, for a create, a one-shot query and an agent tool (whose
// prompt goes in --agents); no CLI starts (issue 27: it failed at the
// process's start with "argument list too long").
func TestOptionTooLongForOneArgument(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the limit of one argument is Linux's (sessions/options tests the others')")
	}
	e := newAgentEnv(t)
	writeAgent(t, e.project, "wordy.md", strings.Repeat("Be thorough. ", 12000), "name: wordy", "description: A long prompt")
	e.serve(t, "2025-11-25", sessions.Config{}, 0)
	long := strings.Repeat("x", 200000)
	// Text goes by initialize, not on the command line: any length.
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"claude_session_create", map[string]any{"cwd": t.TempDir(), "systemPrompt": long}},
		{"claude_session_create", map[string]any{"cwd": t.TempDir(), "jsonSchema": map[string]any{"type": "object", "description": long}}},
		{"wordy", map[string]any{"cwd": t.TempDir(), "prompt": "hi"}},
	} {
		if res, _ := e.call(t, c.tool, c.args, nil); res.IsError {
			t.Errorf("%s: %s", c.tool, resText(res))
		}
	}
	// What is still on the command line is still bound by it.
	res, _ := e.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir(), "allowedTools": []string{long}}, nil)
	if want := "allowedTools is 200000 bytes; the claude CLI takes at most 131071 bytes in one argument"; !res.IsError || !strings.Contains(resText(res), want) {
		t.Errorf("allowedTools of 200000 bytes: %s, want %q", resText(res), want)
	}
}

// TestAgentToolSteer: an agent tool's running session takes a message
// (claude_chat_steer widens nothing: it is a prompt); answered in a turn of
// its own, the agent tool's result says followUp and claude_chat_wait
// returns the answer.
func TestAgentToolSteer(t *testing.T) {
	e := newAgentEnv(t)
	writeAgent(t, e.project, "writer.md", "You write.", "name: writer", "description: Writes")
	e.serve(t, "2025-11-25", sessions.Config{}, 0)
	type result struct {
		res *mcp.CallToolResult
		out map[string]any
	}
	done := make(chan result, 1)
	go func() {
		res, out := e.call(t, "writer", map[string]any{"prompt": "SLOW6", "cwd": t.TempDir()}, nil)
		done <- result{res, out}
	}()
	var sid string
	testkit.Until(t, 10*time.Second, "the agent tool's session to run", func() bool {
		for _, s := range e.mgr.List() {
			if s.CurrentRun() != nil {
				sid = s.ID
			}
		}
		return sid != ""
	})
	if res, out := e.call(t, "claude_chat_steer", map[string]any{"sessionId": sid, "message": "STEERED also say hi"}, nil); res.IsError || out["sent"] != true {
		t.Fatalf("steer: %s", resText(res))
	}
	r := <-done
	fu, _ := r.out["followUp"].(map[string]any)
	if r.res.IsError || fu["status"] != "running" {
		t.Fatalf("the agent tool's result: %s %v", resText(r.res), r.out)
	}
	if res, w := e.call(t, "claude_chat_wait", map[string]any{"sessionId": sid}, nil); res.IsError || w["finalText"] != "Hello from fake API (n_messages=1)" {
		t.Errorf("claude_chat_wait: %s %v", resText(res), w)
	}
}
