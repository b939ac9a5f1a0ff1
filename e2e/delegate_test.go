//go:build linux

package e2e_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
)

// End-to-end tests of delegating real work: effort, the built-in tool set,
// custom agents, settings and their sources, structured output, budgets,
// images, git worktrees, recovery of a lost transcript, names and the
// fallback model. Each checks what the real CLI sent to the fake API and
// what the tools reported. (Linux only: the replay test kills a claude by
// its pid and waits through waitState.)

// effortOf is the effort a request asks for (output_config.effort), "" when
// it names none.
func effortOf(t *testing.T, r *fakeapi.Request) string {
	t.Helper()
	var body struct {
		OutputConfig struct {
			Effort string `json:"effort"`
		} `json:"output_config"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("decoding the request body: %v", err)
	}
	return body.OutputConfig.Effort
}

// requestsFor lists the /v1/messages requests of the turns whose prompt
// holds s (see lastPrompt): the prompt's request and those that follow it
// with tool results or retries.
func requestsFor(api *fakeapi.Server, s string) []fakeapi.Request {
	var out []fakeapi.Request
	for _, r := range api.MessageRequests() {
		if strings.Contains(lastPrompt(&r), s) {
			out = append(out, r)
		}
	}
	return out
}

// lastPrompt is the text of the last user message that has text: the
// prompt of the turn a request belongs to (tool results carry none).
func lastPrompt(r *fakeapi.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if m := r.Messages[i]; m.Role == "user" {
			if s := m.Text(); s != "" {
				return s
			}
		}
	}
	return ""
}

// builtinTools is a request's tool names without DeferredToolPlaceholder,
// sorted. CLI 2.1.330 adds that placeholder (never called: it keeps
// deferred tool loading on) to every non-empty tool list; 2.1.197 does not.
func builtinTools(r *fakeapi.Request) []string {
	names := slices.DeleteFunc(toolNames(r), func(n string) bool { return n == "DeferredToolPlaceholder" })
	slices.Sort(names)
	return names
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// rawOf is a value of a tool's structured output as JSON text.
func rawOf(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestE2EDelegateEffort: a session's effort reaches the API as
// output_config.effort; a query's own effort applies to that query only and
// is switched in the running process (same pid, no restart), and the next
// query is back at the session's effort. Bad levels are refused.
func TestE2EDelegateEffort(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The tool's input schema lists the levels.
	res, _ := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "effort": "hard"}, nil)
	wantToolError(t, "create with effort hard", res, "effort", "hard", "xhigh")

	// The CLI's default model takes effort (a model without effort support,
	// such as sonnet 4.5, ignores it). xhigh is neither CLI's default
	// (2.1.330: medium, 2.1.197: high), so a reset to the default shows.
	sid, _ := e.create(t, ctx, map[string]any{"effort": "xhigh"})
	pid := pidOf(e.info(t, ctx, sid))
	if res, _ := e.query(t, ctx, sid, "EFFORT-ONE"); res.IsError {
		t.Fatalf("first query: %s", text(res))
	}
	res, _ = e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "EFFORT-TWO", "effort": "low"}, nil)
	if res.IsError {
		t.Fatalf("query with effort low: %s", text(res))
	}
	if res, _ := e.query(t, ctx, sid, "EFFORT-THREE"); res.IsError {
		t.Fatalf("third query: %s", text(res))
	}
	for _, c := range [][2]string{{"EFFORT-ONE", "xhigh"}, {"EFFORT-TWO", "low"}, {"EFFORT-THREE", "xhigh"}} {
		if got := effortOf(t, requestFor(t, e.api, c[0])); got != c[1] {
			t.Errorf("%s: the API request's output_config.effort = %q, want %q", c[0], got, c[1])
		}
	}
	info := e.info(t, ctx, sid)
	if got := pidOf(info); pid == 0 || got != pid {
		t.Errorf("claude pid %d before the effort switch, %d after: the process was restarted", pid, got)
	}
	if info["effort"] != "xhigh" {
		t.Errorf("list shows effort %v, want the session's xhigh", info["effort"])
	}
	res, _ = e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "x", "effort": "turbo"}, nil)
	wantToolError(t, "query with effort turbo", res, "effort", "turbo")

	res, _ = e.call(t, ctx, "claude_direct_query", map[string]any{"cwd": e.cwd, "prompt": "EFFORT-DIRECT", "effort": "max"}, nil)
	if res.IsError {
		t.Fatalf("direct query with effort: %s", text(res))
	}
	if got := effortOf(t, requestFor(t, e.api, "EFFORT-DIRECT")); got != "max" {
		t.Errorf("direct query: output_config.effort = %q, want max", got)
	}
}

// TestE2EDelegateTools: tools is exactly the set of built-in tools the
// model is offered; [] offers none.
func TestE2EDelegateTools(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, c := range []struct {
		prompt string
		tools  []string
		want   []string
	}{
		{"TOOLS-TWO", []string{"Read", "Grep"}, []string{"Grep", "Read"}},
		{"TOOLS-NONE", []string{}, nil},
	} {
		res, _ := e.call(t, ctx, "claude_direct_query", map[string]any{"cwd": e.cwd, "prompt": c.prompt, "tools": c.tools}, nil)
		if res.IsError {
			t.Fatalf("%s: %s", c.prompt, text(res))
		}
		r := requestFor(t, e.api, c.prompt)
		if got := builtinTools(r); !slices.Equal(got, c.want) {
			t.Errorf("tools %v: the request offers %v, want %v", c.tools, toolNames(r), c.want)
		}
		if len(c.want) == 0 && len(r.Tools) != 0 {
			t.Errorf("tools []: the request offers %v, want nothing", toolNames(r))
		}
	}
	// Without the option the CLI's default set is offered.
	if res, _ := e.call(t, ctx, "claude_direct_query", map[string]any{"cwd": e.cwd, "prompt": "TOOLS-DEFAULT"}, nil); res.IsError {
		t.Fatalf("default tools: %s", text(res))
	}
	if got := toolNames(requestFor(t, e.api, "TOOLS-DEFAULT")); !slices.Contains(got, "Bash") || !slices.Contains(got, "Write") {
		t.Errorf("without tools the request offers %v, want the default set (Bash, Write, …)", got)
	}
}

// TestE2EDelegateAgents: custom agents reach the model (the CLI lists them
// in a system entry of the messages), and when the model delegates to one,
// the sub-agent runs with the agent's prompt, tools and model.
func TestE2EDelegateAgents(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: noElicitation(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	res, _ := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd,
		"agents": map[string]any{"x": map[string]any{"description": "d"}}}, nil)
	wantToolError(t, "agent without prompt", res, `agents["x"]`, `"prompt"`)

	e.api.SetHandler(func(r *fakeapi.Request) *fakeapi.Reply {
		if !strings.Contains(r.LastUserText(), "AGENTS-RUN") {
			return nil
		}
		in := map[string]any{"description": "Review the code", "prompt": "SUBAGENT-TASK-9", "subagent_type": "reviewer"}
		// CLI 2.1.330 runs agents in the background unless told not to
		// (then the report comes as a second result, in a turn of its
		// own); 2.1.197 has no such parameter and runs them in the
		// foreground.
		for _, raw := range r.Tools {
			var tl struct {
				Name        string `json:"name"`
				InputSchema struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"input_schema"`
			}
			if json.Unmarshal(raw, &tl) == nil && tl.Name == "Agent" && tl.InputSchema.Properties["run_in_background"] != nil {
				in["run_in_background"] = false
			}
		}
		return &fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "Agent", Input: in}}}
	})
	sid, _ := e.create(t, ctx, map[string]any{"agents": map[string]any{"reviewer": map[string]any{
		"description": "Reviews code DESCMARK-9", "prompt": "You are AGENTPROMPT-9.", "tools": []string{"Read", "Grep"}, "model": "haiku"}}})
	res, out := e.query(t, ctx, sid, "AGENTS-RUN")
	if res.IsError {
		t.Fatalf("query: %s", text(res))
	}
	parent := requestFor(t, e.api, "AGENTS-RUN")
	if !bytes.Contains(parent.Body, []byte("reviewer: Reviews code DESCMARK-9")) {
		t.Errorf("the request does not list the agent reviewer with its description")
	}
	sub := requestFor(t, e.api, "SUBAGENT-TASK-9")
	if !strings.Contains(systemText(sub), "AGENTPROMPT-9") {
		t.Errorf("the sub-agent's system prompt lacks the agent's prompt: %q", tail(systemText(sub), 500))
	}
	if got := builtinTools(sub); !slices.Equal(got, []string{"Grep", "Read"}) {
		t.Errorf("the sub-agent is offered %v, want the agent's Read and Grep", toolNames(sub))
	}
	if !strings.Contains(sub.Model, "haiku") {
		t.Errorf("the sub-agent's model = %q, want the agent's haiku", sub.Model)
	}
	if ft, _ := out["finalText"].(string); !strings.HasPrefix(ft, "Tool said: ") || !strings.Contains(ft, "Hello from fake API") {
		t.Errorf("finalText = %q, want the sub-agent's report passed back", ft)
	}

	// agent: one of the agents runs the session itself, with its prompt
	// and tools.
	sid, _ = e.create(t, ctx, map[string]any{"agent": "reviewer", "agents": map[string]any{"reviewer": map[string]any{
		"description": "Reviews code", "prompt": "You are MAINAGENT-7.", "tools": []string{"Read", "Grep"}}}})
	if res, _ := e.query(t, ctx, sid, "AGENT-MAIN-7 hi"); res.IsError {
		t.Fatalf("query with agent: %s", text(res))
	}
	main := requestFor(t, e.api, "AGENT-MAIN-7")
	if !strings.Contains(systemText(main), "MAINAGENT-7") {
		t.Errorf("with agent reviewer the session's system prompt lacks the agent's prompt: %q", tail(systemText(main), 500))
	}
	if got := builtinTools(main); !slices.Equal(got, []string{"Grep", "Read"}) {
		t.Errorf("with agent reviewer the session is offered %v, want the agent's Read and Grep", toolNames(main))
	}
	res, _ = e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "agent": "--bad"}, nil)
	wantToolError(t, "bad agent name", res, "invalid agent")
}

// TestE2EDelegateSettingSources: settingSources [] loads no CLAUDE.md
// (neither the project's nor the user's), while the default loads both,
// and ["user"] only the user's.
func TestE2EDelegateSettingSources(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const userMark, projMark = "USERMARK-5c1e", "PROJMARK-9a7b"
	if err := os.MkdirAll(filepath.Join(e.home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, ".claude", "CLAUDE.md"), []byte("Always say "+userMark+".\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.cwd, "CLAUDE.md"), []byte("This project says "+projMark+".\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, _ := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "settingSources": []string{"team"}}, nil)
	wantToolError(t, "settingSources team", res, "settingSources", "team") // the tool's input schema lists the sources

	for _, c := range []struct {
		prompt     string
		sources    []string // nil: the option left out
		user, proj bool     // which markers the request must carry
	}{
		{"SOURCES-DEFAULT", nil, true, true},
		{"SOURCES-NONE", []string{}, false, false},
		{"SOURCES-USER", []string{"user"}, true, false},
	} {
		args := map[string]any{"cwd": e.cwd, "prompt": c.prompt}
		if c.sources != nil {
			args["settingSources"] = c.sources
		}
		if res, _ := e.call(t, ctx, "claude_direct_query", args, nil); res.IsError {
			t.Fatalf("%s: %s", c.prompt, text(res))
		}
		body := requestFor(t, e.api, c.prompt).Body
		if got := bytes.Contains(body, []byte(userMark)); got != c.user {
			t.Errorf("settingSources %v: the request carries $HOME/.claude/CLAUDE.md: %v, want %v", c.sources, got, c.user)
		}
		if got := bytes.Contains(body, []byte(projMark)); got != c.proj {
			t.Errorf("settingSources %v: the request carries the project's CLAUDE.md: %v, want %v", c.sources, got, c.proj)
		}
	}
}

// TestE2EDelegateSettings: settings, as an object or as a file
// (settingsFile), apply (a deny rule removes the tool), also with
// settingSources [].
func TestE2EDelegateSettings(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	file := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(file, []byte(`{"permissions": {"deny": ["Edit"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	res, _ := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "settingsFile": "settings.json"}, nil)
	wantToolError(t, "relative settings path", res, "not an absolute path")
	res, _ = e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "settingsFile": filepath.Join(e.home, "missing.json")}, nil)
	wantToolError(t, "missing settings file", res, "no such file")
	res, _ = e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "settings": file}, nil)
	wantToolError(t, "a settings path in settings", res, "as settingsFile")

	for _, c := range []struct {
		prompt string
		args   map[string]any
		gone   string
	}{
		{"SETTINGS-OBJECT", map[string]any{"settings": map[string]any{"permissions": map[string]any{"deny": []string{"Write"}}}, "settingSources": []string{}}, "Write"},
		{"SETTINGS-FILE", map[string]any{"settingsFile": file}, "Edit"},
	} {
		c.args["cwd"], c.args["prompt"] = e.cwd, c.prompt
		if res, _ := e.call(t, ctx, "claude_direct_query", c.args, nil); res.IsError {
			t.Fatalf("%s: %s", c.prompt, text(res))
		}
		names := toolNames(requestFor(t, e.api, c.prompt))
		if slices.Contains(names, c.gone) || !slices.Contains(names, "Read") {
			t.Errorf("%s: the request offers %v, want Read but not the denied %s", c.prompt, names, c.gone)
		}
	}
}

// TestE2EDelegateJSONSchema: with jsonSchema the model is offered the
// StructuredOutput tool with that schema; its answer comes back as
// structuredOutput (and as finalText). An answer in plain text, or one that
// keeps failing the schema, is an error that says so. Bad schemas are
// refused at create.
func TestE2EDelegateJSONSchema(t *testing.T) {
	t.Parallel()
	// Two tries instead of the CLI's five: the server passes its own
	// environment on to the CLI.
	e := startE2E(t, e2eOptions{env: map[string]string{"MAX_STRUCTURED_OUTPUT_RETRIES": "2"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	for _, bad := range []struct {
		schema any
		want   string
	}{
		{map[string]any{"type": "objekt"}, "invalid jsonSchema"},
		{map[string]any{"type": "array", "items": map[string]any{"type": "string"}}, `must be "object"`},
		{"just a string", "object"},
		{map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "strin"}}}, `"strin"`},
	} {
		res, _ := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "jsonSchema": bad.schema}, nil)
		wantToolError(t, "jsonSchema "+string(rawOf(bad.schema)), res, bad.want)
	}
	if n := len(e.api.Requests()); n != 0 {
		t.Errorf("refused creates reached the API (%d requests)", n)
	}

	// STRUCTBAD: a model that keeps answering with input the schema
	// refuses. STRUCTAGAIN: a good answer, also when the CLI puts the last
	// (unanswered) StructuredOutput tool_result of the failed turn before
	// the prompt in the same user message (the fake's STRUCTURED[…]
	// keyword would answer the tool_result instead).
	e.api.SetHandler(func(r *fakeapi.Request) *fakeapi.Reply {
		answer := func(v any) *fakeapi.Reply {
			return &fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: "StructuredOutput", Input: v}}}
		}
		switch p := lastPrompt(r); {
		case strings.Contains(p, "STRUCTBAD"):
			return answer(map[string]any{"answer": 42})
		case strings.Contains(p, "STRUCTAGAIN"):
			return answer(map[string]any{"answer": "again"})
		}
		return nil
	})
	schema := json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`)
	sid, _ := e.create(t, ctx, map[string]any{"jsonSchema": schema})

	res, out := e.query(t, ctx, sid, `STRUCTURED[{"answer":"42"}]`)
	if res.IsError {
		t.Fatalf("structured query: %s", text(res))
	}
	if so := rawOf(out["structuredOutput"]); !jsonEqual(so, []byte(`{"answer":"42"}`)) {
		t.Errorf("structuredOutput = %s, want {\"answer\":\"42\"}", so)
	}
	if ft, _ := out["finalText"].(string); !jsonEqual([]byte(ft), []byte(`{"answer":"42"}`)) {
		t.Errorf("finalText = %q, want the structured output as JSON text", ft)
	}
	var offered json.RawMessage
	for _, raw := range requestFor(t, e.api, "STRUCTURED[").Tools {
		var tl struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if json.Unmarshal(raw, &tl) == nil && tl.Name == "StructuredOutput" {
			offered = tl.InputSchema
		}
	}
	if !jsonEqual(offered, schema) {
		t.Errorf("the request's StructuredOutput tool has input_schema %s, want the session's %s", offered, schema)
	}

	// Plain text, also after the CLI insists: no structured output.
	res, out = e.query(t, ctx, sid, "just talk")
	wantToolError(t, "an answer in text", res, "not structured output")
	if out["structuredOutput"] != nil {
		t.Errorf("structuredOutput = %v for a text answer", out["structuredOutput"])
	}

	res, out = e.query(t, ctx, sid, "STRUCTBAD")
	wantToolError(t, "answers that fail the schema", res, "did not match jsonSchema", "after 2 attempts")
	if md, _ := out["metadata"].(map[string]any); md["subtype"] != "error_max_structured_output_retries" {
		t.Errorf("metadata = %v, want subtype error_max_structured_output_retries", md)
	}
	if n := len(requestsFor(e.api, "STRUCTBAD")); n != 2 {
		t.Errorf("the model was asked %d times, want 2 (MAX_STRUCTURED_OUTPUT_RETRIES=2 did not reach the CLI?)", n)
	}

	// The session goes on.
	res, out = e.query(t, ctx, sid, "STRUCTAGAIN")
	if res.IsError || !jsonEqual(rawOf(out["structuredOutput"]), []byte(`{"answer":"again"}`)) {
		t.Errorf("query after the failure: %s, structuredOutput %v", text(res), out["structuredOutput"])
	}
}

// TestE2EDelegateBudget: a session's maxBudgetUsd stops the turn that
// spends it (the CLI's error_max_budget_usd, said plainly) and refuses the
// next before it reaches the API; --max-session-budget-usd caps what a
// session may ask; --max-total-budget-usd refuses every session's turns
// once all together spent it.
func TestE2EDelegateBudget(t *testing.T) {
	t.Parallel()
	t.Run("session", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		e := startE2E(t, e2eOptions{args: []string{"--max-session-budget-usd", "1"}})
		res, _ := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "maxBudgetUsd": 5}, nil)
		wantToolError(t, "maxBudgetUsd over the ceiling", res, "maxBudgetUsd", "--max-session-budget-usd")

		// One reply of the fake costs $0.00022 (2.1.330's opus prices;
		// $0.000275 on 2.1.197), more than the whole budget.
		sid, _ := e.create(t, ctx, map[string]any{"maxBudgetUsd": 0.0001})
		res, out := e.query(t, ctx, sid, "BUDGET-ONE")
		wantToolError(t, "the turn that spends the budget", res, "budget", "maxBudgetUsd")
		if md, _ := out["metadata"].(map[string]any); md["subtype"] != "error_max_budget_usd" {
			t.Errorf("metadata = %v, want subtype error_max_budget_usd", md)
		}
		if e, _ := out["error"].(string); !strings.Contains(e, "maximum budget") {
			t.Errorf("error = %q, want the CLI's reason (Reached maximum budget)", e)
		}
		res, _ = e.query(t, ctx, sid, "BUDGET-TWO")
		wantToolError(t, "a query after the budget is spent", res, "maxBudgetUsd", "create a new session")
		if n := len(requestsFor(e.api, "BUDGET-TWO")); n != 0 {
			t.Errorf("the refused query reached the API (%d requests)", n)
		}
	})

	t.Run("total", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		e := startE2E(t, e2eOptions{args: []string{"--max-total-budget-usd", "0.0001"}})
		a, _ := e.create(t, ctx, nil)
		b, _ := e.create(t, ctx, nil)
		if res, _ := e.query(t, ctx, a, "TOTAL-A"); res.IsError {
			t.Fatalf("the first turn: %s", text(res))
		}
		res, _ := e.query(t, ctx, b, "TOTAL-B")
		wantToolError(t, "another session's turn past the total budget", res, "--max-total-budget-usd")
		if n := len(requestsFor(e.api, "TOTAL-B")); n != 0 {
			t.Errorf("the refused query reached the API (%d requests)", n)
		}
	})
}

// pngOf is an 8×8 PNG of one colour.
func pngOf(t *testing.T, c color.Color) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for x := range 8 {
		for y := range 8 {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// imageBlocks lists the base64 image blocks of a request's last user
// message as media type and data.
func imageBlocks(t *testing.T, r *fakeapi.Request) [][2]string {
	t.Helper()
	var out [][2]string
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role != "user" {
			continue
		}
		var blocks []struct {
			Type   string `json:"type"`
			Source struct {
				Type      string `json:"type"`
				MediaType string `json:"media_type"`
				Data      string `json:"data"`
			} `json:"source"`
		}
		_ = json.Unmarshal(r.Messages[i].Content, &blocks) // string content has no image
		for _, b := range blocks {
			if b.Type == "image" && b.Source.Type == "base64" {
				out = append(out, [2]string{b.Source.MediaType, b.Source.Data})
			}
		}
		return out
	}
	return nil
}

// TestE2EDelegateImages: images given as base64 data or as a file (path
// relative to the session's directory) reach the API as image blocks with
// the same bytes; what is not an image, or not the type it claims, is
// refused.
func TestE2EDelegateImages(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	red, blue := pngOf(t, color.RGBA{255, 0, 0, 255}), pngOf(t, color.RGBA{0, 0, 255, 255})
	if err := os.WriteFile(filepath.Join(e.cwd, "blue.png"), blue, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.cwd, "notes.txt"), []byte("not a picture\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sid, _ := e.create(t, ctx, nil)

	res, _ := e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "IMAGE-DATA describe",
		"images": []map[string]any{{"data": base64.StdEncoding.EncodeToString(red), "mediaType": "image/png"}}}, nil)
	if res.IsError {
		t.Fatalf("query with a base64 image: %s", text(res))
	}
	res, _ = e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "IMAGE-PATH describe",
		"images": []map[string]any{{"path": "blue.png"}}}, nil)
	if res.IsError {
		t.Fatalf("query with an image file: %s", text(res))
	}
	for _, c := range []struct {
		prompt string
		png    []byte
	}{{"IMAGE-DATA", red}, {"IMAGE-PATH", blue}} {
		got := imageBlocks(t, requestFor(t, e.api, c.prompt))
		if len(got) != 1 || got[0] != [2]string{"image/png", base64.StdEncoding.EncodeToString(c.png)} {
			t.Errorf("%s: the request's image blocks = %v, want the one PNG sent", c.prompt, got)
		}
	}

	res, _ = e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "x",
		"images": []map[string]any{{"path": "notes.txt"}}}, nil)
	wantToolError(t, "a text file as image", res, "images[0]", "not an image")
	res, _ = e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "x",
		"images": []map[string]any{{"data": base64.StdEncoding.EncodeToString(red), "mediaType": "image/jpeg"}}}, nil)
	wantToolError(t, "PNG data called image/jpeg", res, "image/jpeg", "does not match")
	res, _ = e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "x",
		"images": []map[string]any{{"path": filepath.Join(e.cwd, "none.png")}}}, nil)
	wantToolError(t, "a missing image file", res, "none.png", "not a readable file")
}

// gitRun runs git in dir and fails the test when it fails.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestE2EDelegateWorktrees: two sessions with worktree on one repository
// write the same relative path in parallel, each into its own worktree on
// its own branch, and the main checkout stays untouched; results report
// each worktree and what changed in it; close keeps a changed worktree
// (saying where) and removes an unchanged one with its branch. A cwd
// outside a repository is refused.
func TestE2EDelegateWorktrees(t *testing.T) {
	t.Parallel()
	requireGit(t)
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: noElicitation(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	res, _ := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "worktree": "auto"}, nil)
	wantToolError(t, "worktree outside a repository", res, "not inside a git repository")

	repo := filepath.Join(e.home, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gitRun(t, repo, "init", "--quiet")
	if err := os.WriteFile(filepath.Join(repo, "README"), []byte("base\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, repo, "add", "README")
	gitRun(t, repo, "commit", "--quiet", "-m", "base")

	res, _ = e.call(t, ctx, "claude_session_create", map[string]any{"cwd": repo, "worktree": "bad/name"}, nil)
	wantToolError(t, "a worktree name with a slash", res, `invalid worktree name "bad/name"`)

	type wt struct {
		sid, path, branch string
	}
	newSession := func(worktree string) wt {
		sid, out := e.create(t, ctx, map[string]any{"cwd": repo, "worktree": worktree, "permissionMode": "acceptEdits"})
		w, _ := out["worktree"].(map[string]any)
		path, _ := w["path"].(string)
		branch, _ := w["branch"].(string)
		if !strings.HasPrefix(path, filepath.Join(repo, ".claude", "worktrees")+"/") || branch != "worktree-"+filepath.Base(path) {
			t.Fatalf("create with worktree %v: worktree = %v", worktree, w)
		}
		if out["cwd"] != path {
			t.Errorf("create with worktree %v: cwd = %v, want the worktree %s", worktree, out["cwd"], path)
		}
		return wt{sid, path, branch}
	}
	alpha, other, idle := newSession("alpha"), newSession("auto"), newSession("idle")
	if alpha.path != filepath.Join(repo, ".claude", "worktrees", "alpha") || alpha.branch != "worktree-alpha" {
		t.Errorf("worktree alpha is at %s on %s", alpha.path, alpha.branch)
	}

	// Both write notes.txt (relative: in their working directory) at once.
	var wg sync.WaitGroup
	outs := make([]map[string]any, 2)
	for i, w := range []wt{alpha, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, out, err := e.callErr(ctx, "claude_chat_query", map[string]any{"sessionId": w.sid,
				"prompt": "TOOL_WRITE[notes.txt|written by " + w.branch + "]"}, nil)
			switch {
			case err != nil:
				t.Errorf("%s: %v", w.branch, err)
			case res.IsError:
				t.Errorf("%s: %s", w.branch, text(res))
			}
			outs[i] = out
		}()
	}
	wg.Wait()
	for i, w := range []wt{alpha, other} {
		data, err := os.ReadFile(filepath.Join(w.path, "notes.txt"))
		if string(data) != "written by "+w.branch {
			t.Errorf("%s/notes.txt = %q (%v), want the session's own content", w.path, data, err)
		}
		rw, _ := outs[i]["worktree"].(map[string]any)
		if rw["path"] != w.path || !slices.Equal(toStrings(rw["changedFiles"]), []string{"notes.txt"}) {
			t.Errorf("%s: the query result's worktree = %v, want %s with changedFiles [notes.txt]", w.branch, rw, w.path)
		}
		if lw, _ := e.info(t, ctx, w.sid)["worktree"].(map[string]any); lw["branch"] != w.branch {
			t.Errorf("list shows worktree %v for %s", lw, w.branch)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, "notes.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the main checkout has notes.txt (%v)", err)
	}
	if st := gitRun(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("the main checkout is not clean:\n%s", st)
	}

	// Close: the changed worktree is kept, the unchanged one removed.
	res, out := e.call(t, ctx, "claude_session_close", map[string]any{"sessionId": alpha.sid}, nil)
	w, _ := out["worktree"].(map[string]any)
	if res.IsError || w["removed"] == true || w["path"] != alpha.path || !strings.Contains(text(res), alpha.path) || !strings.Contains(text(res), "kept") {
		t.Errorf("close of the changed worktree: %s %v", text(res), w)
	}
	if _, err := os.Stat(filepath.Join(alpha.path, "notes.txt")); err != nil {
		t.Errorf("the kept worktree lost its file: %v", err)
	}
	res, out = e.call(t, ctx, "claude_session_close", map[string]any{"sessionId": idle.sid}, nil)
	if w, _ := out["worktree"].(map[string]any); res.IsError || w["removed"] != true || !strings.Contains(text(res), "removed") {
		t.Errorf("close of the unchanged worktree: %s %v", text(res), w)
	}
	if _, err := os.Stat(idle.path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the unchanged worktree %s is still there (%v)", idle.path, err)
	}
	if br := gitRun(t, repo, "branch", "--list", idle.branch); br != "" {
		t.Errorf("the unchanged worktree's branch is still there: %s", br)
	}
	if br := gitRun(t, repo, "branch", "--list", alpha.branch); br == "" {
		t.Errorf("the kept worktree's branch %s is gone", alpha.branch)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range asSlice(v) {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// TestE2EDelegateReplay: a session whose claude is killed and whose
// transcript is lost, with no copy in a store (--persist=false), recovers
// on its next query: a fresh conversation (new claudeSessionId) whose first
// prompt carries the earlier prompts and answers, reported as recovered:
// replayed; the query after it is normal. (With a store, the transcript
// comes back from it: TestE2EDelegateTranscriptRestored.)
func TestE2EDelegateReplay(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{args: []string{"--persist=false"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sid, pid, csid := twoTurnsKilled(t, ctx, e, "REPLAY-ONE", "REPLAY-TWO")
	// The CLI is gone, so nothing writes the transcript any more. 2.1.197
	// writes it lazily and may not have written it yet: that is the case
	// this recovery is for, too.
	transcript := history.TranscriptPath(e.env, e.cwd, csid).String()
	if err := os.Remove(transcript); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	} else if err != nil {
		t.Logf("the CLI had not written %s before it was killed", transcript)
	}

	res, out := e.query(t, ctx, sid, "REPLAY-THREE")
	if res.IsError {
		t.Fatalf("the query after the loss: %s", text(res))
	}
	if out["recovered"] != "replayed" || !strings.Contains(text(res), "restored") {
		t.Errorf("recovered = %v, text %q; want replayed, said in the text", out["recovered"], text(res))
	}
	newID, _ := out["claudeSessionId"].(string)
	if newID == "" || newID == csid {
		t.Errorf("claudeSessionId after the replay = %q, want a new one (was %s)", newID, csid)
	}
	r := requestFor(t, e.api, "REPLAY-THREE")
	if n := r.ConversationLen(); n != 1 {
		t.Errorf("the replayed turn's request holds %d messages, want a fresh conversation of 1", n)
	}
	prompt := r.LastUserText()
	for _, want := range []string{"REPLAY-ONE", "Hello from fake API (n_messages=1)", "REPLAY-TWO", "Hello from fake API (n_messages=3)"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the replayed prompt lacks %q:\n%s", want, prompt)
		}
	}
	if got := pidOf(e.info(t, ctx, sid)); got == pid || got == 0 {
		t.Errorf("pid after the replay = %d (killed one: %d)", got, pid)
	}

	res, out = e.query(t, ctx, sid, "REPLAY-FOUR")
	if res.IsError || out["recovered"] != nil || out["claudeSessionId"] != newID {
		t.Errorf("the query after the replay: %s, recovered %v, claudeSessionId %v (want %s)", text(res), out["recovered"], out["claudeSessionId"], newID)
	}
	r = requestFor(t, e.api, "REPLAY-FOUR")
	if n := r.ConversationLen(); n != 3 || strings.Contains(r.LastUserText(), "REPLAY-ONE") {
		t.Errorf("the next request holds %d messages (want 3) and its prompt is %q", n, r.LastUserText())
	}
}

// twoTurnsKilled creates a session, runs the prompts in it, SIGKILLs its
// claude and waits until the session is dormant; it returns the session,
// the killed pid and the conversation's claudeSessionId.
func twoTurnsKilled(t *testing.T, ctx context.Context, e *e2e, prompts ...string) (sid string, pid int, csid string) {
	t.Helper()
	sid, _ = e.create(t, ctx, nil)
	for _, p := range prompts {
		if res, _ := e.query(t, ctx, sid, p); res.IsError {
			t.Fatalf("%s: %s", p, text(res))
		}
	}
	info := e.info(t, ctx, sid)
	pid, csid = pidOf(info), info["claudeSessionId"].(string)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e.waitState(t, ctx, sid, "dormant", 15*time.Second)
	return sid, pid, csid
}

// TestE2EDelegateTranscriptRestored: a session whose claude is killed and
// whose transcript file is lost, with the default store, goes on with its
// conversation: the store holds the transcript (saved after each turn and
// when the process ended), which is written back before --resume — the
// same claudeSessionId, every earlier message in the next request, and
// nothing to report as recovered.
func TestE2EDelegateTranscriptRestored(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sid, _, csid := twoTurnsKilled(t, ctx, e, "RESTORE-ONE", "RESTORE-TWO")
	transcript := history.TranscriptPath(e.env, e.cwd, csid).String()
	if err := os.Remove(transcript); err != nil {
		t.Fatalf("the CLI's transcript after two turns: %v", err)
	}
	res, out := e.query(t, ctx, sid, "RESTORE-THREE")
	if res.IsError || out["recovered"] != nil || out["claudeSessionId"] != csid {
		t.Errorf("the query after the loss: %s, recovered %v, claudeSessionId %v (want %s)", text(res), out["recovered"], out["claudeSessionId"], csid)
	}
	if n := requestFor(t, e.api, "RESTORE-THREE").ConversationLen(); n != 5 {
		t.Errorf("the request after the loss holds %d messages, want the two earlier turns and the prompt (5)", n)
	}
	if _, err := os.Stat(transcript); err != nil {
		t.Errorf("the transcript was not written back: %v", err)
	}
	if log, _ := os.ReadFile(e.logPath); !strings.Contains(string(log), "wrote the session's transcript from the session store") {
		t.Errorf("the server did not say it wrote the transcript back")
	}
}

// TestE2EDelegateNameAndFallback: a session's name shows in
// claude_session_list; with fallbackModel a turn whose model is missing
// (404) or overloaded (529) is answered by the fallback model.
func TestE2EDelegateNameAndFallback(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	sid, _ := e.create(t, ctx, map[string]any{"name": "nightly-review"})
	if res, _ := e.query(t, ctx, sid, "NAMED"); res.IsError {
		t.Fatalf("query in the named session: %s", text(res))
	}
	if n := e.info(t, ctx, sid)["name"]; n != "nightly-review" {
		t.Errorf("list shows name %v", n)
	}

	const fallback = "claude-haiku-4-5"
	// The fake answers 404 for a model named *nonexistent*, and (below)
	// 529 for every model but the fallback on FALLBACK-529.
	e.api.SetHandler(func(r *fakeapi.Request) *fakeapi.Reply {
		if strings.Contains(lastPrompt(r), "FALLBACK-529") && r.Model != fallback {
			return fakeapi.ErrorReply(529, "Overloaded")
		}
		return nil
	})
	for _, c := range []struct {
		prompt, model, status string
	}{
		{"FALLBACK-404", "claude-nonexistent-7", "404"},
		{"FALLBACK-529", "", "529"},
	} {
		args := map[string]any{"fallbackModel": fallback}
		if c.model != "" {
			args["model"] = c.model
		}
		sid, _ := e.create(t, ctx, args)
		res, out := e.query(t, ctx, sid, c.prompt)
		if res.IsError || out["finalText"] != "Hello from fake API (n_messages=1)" {
			t.Errorf("%s: %s", c.prompt, text(res))
		}
		reqs := requestsFor(e.api, c.prompt)
		var models []string
		for _, r := range reqs {
			models = append(models, r.Model)
		}
		if len(models) < 2 || models[0] == fallback || models[len(models)-1] != fallback {
			t.Errorf("%s: the request models were %v, want the main model first and %s last", c.status, models, fallback)
		}
		if c.model != "" && models[0] != c.model {
			t.Errorf("%s: the first request used %s, want %s", c.status, models[0], c.model)
		}
		md, _ := out["metadata"].(map[string]any)
		t.Logf("%s: request models %v; the result reports model %v", c.status, models, md["model"])
	}
}
