package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/e2eenv"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
)

// End-to-end tests of the session options (create arguments) and of the
// server flags that restrict them.

// create creates a session (cwd defaults to e.cwd) and fails the test when
// that fails.
func (e *e2e) create(t *testing.T, ctx context.Context, args map[string]any) (string, map[string]any) {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	if _, ok := args["cwd"]; !ok {
		args["cwd"] = e.cwd
	}
	res, out := e.call(t, ctx, "claude_session_create", args, nil)
	if res.IsError {
		t.Fatalf("create %v: %s", args, text(res))
	}
	sid, _ := out["sessionId"].(string)
	if sid == "" {
		t.Fatalf("create %v: no sessionId in %v", args, out)
	}
	return sid, out
}

// query runs a chat query.
func (e *e2e) query(t *testing.T, ctx context.Context, sid, prompt string) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	return e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": prompt}, nil)
}

// info returns claude_session_list's entry for sid.
func (e *e2e) info(t *testing.T, ctx context.Context, sid string) map[string]any {
	t.Helper()
	res, out := e.call(t, ctx, "claude_session_list", map[string]any{"sessionId": sid}, nil)
	ss, _ := out["sessions"].([]any)
	if res.IsError || len(ss) != 1 {
		t.Fatalf("list %s: %s", sid, text(res))
	}
	return ss[0].(map[string]any)
}

// wantToolError checks that res is a tool error (isError, not a protocol
// error) whose text holds every one of wants.
func wantToolError(t *testing.T, what string, res *mcp.CallToolResult, wants ...string) {
	t.Helper()
	if !res.IsError {
		t.Errorf("%s: succeeded, want a tool error; text %q", what, text(res))
		return
	}
	for _, w := range wants {
		if !strings.Contains(text(res), w) {
			t.Errorf("%s: error text lacks %q: %q", what, w, text(res))
		}
	}
}

// lastRequest is the last /v1/messages request the API received.
func lastRequest(t *testing.T, api *fakeapi.Server) *fakeapi.Request {
	t.Helper()
	reqs := api.MessageRequests()
	if len(reqs) == 0 {
		t.Fatal("the API received no /v1/messages request")
	}
	return &reqs[len(reqs)-1]
}

// requestFor is the last /v1/messages request whose last user text holds s.
func requestFor(t *testing.T, api *fakeapi.Server, s string) *fakeapi.Request {
	t.Helper()
	reqs := api.MessageRequests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if strings.Contains(reqs[i].LastUserText(), s) {
			return &reqs[i]
		}
	}
	t.Fatalf("no /v1/messages request carried %q (of %d)", s, len(reqs))
	return nil
}

// toolNames lists the names of the tools a request offers the model.
func toolNames(r *fakeapi.Request) []string {
	var out []string
	for _, raw := range r.Tools {
		var tl struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &tl) == nil {
			out = append(out, tl.Name)
		}
	}
	return out
}

// systemText is the request's system prompt as text (string or blocks).
func systemText(r *fakeapi.Request) string {
	var s string
	if json.Unmarshal(r.System, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(r.System, &blocks)
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.Text)
		b.WriteString("\n")
	}
	return b.String()
}

// noElicitation is an elicitation handler that fails the test when asked.
func noElicitation(t *testing.T) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		t.Errorf("unexpected permission question: %q", r.Params.Message)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
}

func TestE2EAllowedTools(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: noElicitation(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sid, _ := e.create(t, ctx, map[string]any{"allowedTools": []string{"Bash"}})
	res, out := e.query(t, ctx, sid, "TOOL_BASH[touch a.txt && echo made]")
	if res.IsError || out["finalText"] != "Tool said: made" {
		t.Errorf("query: isError=%v finalText=%q", res.IsError, out["finalText"])
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "a.txt")); err != nil {
		t.Errorf("the pre-allowed Bash command did not run: %v", err)
	}
}

func TestE2EDisallowedTools(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: noElicitation(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sid, _ := e.create(t, ctx, map[string]any{"disallowedTools": []string{"Bash"}})
	res, out := e.query(t, ctx, sid, "TOOL_BASH[touch b.txt && echo made]")
	if res.IsError {
		t.Fatalf("a call to a removed tool should end the turn normally: %s", text(res))
	}
	if first := requestFor(t, e.api, "TOOL_BASH"); strings.Contains(","+strings.Join(toolNames(first), ",")+",", ",Bash,") {
		t.Errorf("the request still offers Bash: %v", toolNames(first))
	}
	trs := lastRequest(t, e.api).LastToolResults()
	if len(trs) != 1 || !trs[0].IsError || !strings.Contains(trs[0].Content, "No such tool available") {
		t.Errorf("the model did not get an is_error tool_result for the removed tool: %+v", trs)
	}
	if ft, _ := out["finalText"].(string); !strings.HasPrefix(ft, "Tool error:") {
		t.Errorf("finalText = %q", ft)
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "b.txt")); err == nil {
		t.Error("the disallowed Bash command ran")
	}
}

func TestE2EMaxTurns(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sid, _ := e.create(t, ctx, map[string]any{"maxTurns": 1, "permissionMode": "bypassPermissions"})
	res, out := e.query(t, ctx, sid, "TOOL_BASH[echo one]")
	md, _ := out["metadata"].(map[string]any)
	if !res.IsError || md["subtype"] != "error_max_turns" || md["isError"] != true {
		t.Fatalf("isError=%v metadata=%v text=%q", res.IsError, md, text(res))
	}
	if e, _ := out["error"].(string); !strings.Contains(e, "maximum number of turns (1)") {
		t.Errorf("error = %q, want it to name the turn limit", e)
	}
	if !strings.Contains(text(res), "maximum number of turns") {
		t.Errorf("text does not say why the turn failed: %q", text(res))
	}
	// The cap applies per query; the session takes the next one.
	if res, out = e.query(t, ctx, sid, "plain"); res.IsError {
		t.Errorf("query after max turns: %s %v", text(res), out)
	}
}

func TestE2EAddDirs(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	extra := t.TempDir()

	res, _ := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "addDirs": []string{"relative/dir"}}, nil)
	wantToolError(t, "relative addDirs entry", res, `addDirs entry "relative/dir"`, "absolute")
	res, _ = e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "addDirs": []string{filepath.Join(extra, "missing")}}, nil)
	wantToolError(t, "missing addDirs entry", res, "does not exist")

	res, out := e.call(t, ctx, "claude_direct_query", map[string]any{"cwd": e.cwd, "addDirs": []string{extra}, "prompt": "ADDDIR hi"}, nil)
	if res.IsError {
		t.Fatalf("direct query with addDirs: %s", text(res))
	}
	// The CLI tells the model about the extra directory.
	if r := requestFor(t, e.api, "ADDDIR"); !bytes.Contains(r.Body, []byte(extra)) {
		t.Errorf("the API request does not mention the added directory %s (finalText %v)", extra, out["finalText"])
	}
}

func TestE2ESystemPrompts(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, _ := e.call(t, ctx, "claude_direct_query", map[string]any{"cwd": e.cwd, "appendSystemPrompt": "MARKER-XYZ", "prompt": "APPENDED"}, nil)
	if res.IsError {
		t.Fatalf("append: %s", text(res))
	}
	appended := systemText(requestFor(t, e.api, "APPENDED"))
	if !strings.Contains(appended, "MARKER-XYZ") || !strings.Contains(appended, "Claude Code") {
		t.Errorf("appendSystemPrompt: system (%d chars) lacks the marker or the default prompt", len(appended))
	}
	res, _ = e.call(t, ctx, "claude_direct_query", map[string]any{"cwd": e.cwd, "systemPrompt": "You are TINY-SYSTEM-PROMPT.", "prompt": "REPLACED"}, nil)
	if res.IsError {
		t.Fatalf("replace: %s", text(res))
	}
	replaced := systemText(requestFor(t, e.api, "REPLACED"))
	if !strings.Contains(replaced, "TINY-SYSTEM-PROMPT") || strings.Contains(replaced, "MARKER-XYZ") {
		t.Errorf("systemPrompt: system = %q", tail(replaced, 500))
	}
	if len(replaced) > 1000 || len(replaced)*4 > len(appended) {
		t.Errorf("systemPrompt did not replace the default: %d chars vs %d with the default prompt:\n%s", len(replaced), len(appended), tail(replaced, 1500))
	}
	t.Logf("system prompt: %d chars appended, %d chars replaced", len(appended), len(replaced))
}

func TestE2EMCPServers(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// A stdio entry without a command is refused before anything starts.
	res, _ := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd,
		"mcpServers": map[string]any{"bad": map[string]any{"args": []string{"x"}}}}, nil)
	wantToolError(t, "mcpServers without command", res, `mcpServers["bad"]`, `"command"`)
	res, _ = e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd,
		"mcpServers": map[string]any{"bad": map[string]any{"type": "ftp", "url": "ftp://x"}}}, nil)
	wantToolError(t, "mcpServers with an unknown type", res, `type "ftp"`)
	if n := len(e.api.Requests()); n != 0 {
		t.Errorf("a refused create reached the API (%d requests)", n)
	}

	// A real stdio MCP server: this binary itself, as the session's tool.
	// The model must be able to use its tools. CLI 2.1.197 puts them in the
	// request's tool list. 2.1.330 defers them behind ToolSearch (its
	// default): the request names them in a message and a ToolSearch call
	// with "select:<names>" loads them into the tool list of the following
	// requests. The fake model does what a model does: it loads the tools
	// when they are deferred, then calls one, which must reach the server.
	const (
		listTool   = "mcp__nested__claude_session_list"
		directTool = "mcp__nested__claude_direct_query"
		searchID   = "toolu_mcpcheck_search"
	)
	var (
		mu       sync.Mutex
		deferred bool     // the prompt's request did not offer the tools
		offered  []string // the tool list of the request answered with the MCP call
	)
	e.api.SetHandler(func(r *fakeapi.Request) *fakeapi.Reply {
		if !strings.Contains(firstUserText(r), "MCPCHECK") {
			return nil
		}
		names := toolNames(r)
		callTool := func() *fakeapi.Reply {
			mu.Lock()
			offered = names
			mu.Unlock()
			return &fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", Name: listTool, Input: map[string]any{}}}}
		}
		trs := r.LastToolResults()
		switch {
		case len(trs) == 0 && slices.Contains(names, listTool):
			return callTool()
		case len(trs) == 0:
			mu.Lock()
			deferred = true
			mu.Unlock()
			return &fakeapi.Reply{Blocks: []fakeapi.Block{{Type: "tool_use", ID: searchID, Name: "ToolSearch",
				Input: map[string]any{"query": "select:" + listTool + "," + directTool, "max_results": 5}}}}
		case trs[0].ToolUseID == searchID:
			if trs[0].IsError {
				return fakeapi.TextReply("ToolSearch failed: " + trs[0].Content)
			}
			return callTool()
		}
		return nil // the MCP tool's result: "Tool said: <result>"
	})
	bin := serverBinary(t)
	sid, _ := e.create(t, ctx, map[string]any{"strictMcpConfig": true, "allowedTools": []string{listTool}, "mcpServers": map[string]any{
		"nested": map[string]any{"command": bin, "args": []string{"--persist=false", "--log-level", "off", "--claude-path", e.claude}},
	}})
	res, out := e.query(t, ctx, sid, "MCPCHECK")
	if res.IsError {
		t.Fatalf("query: %s", text(res))
	}
	if ft, _ := out["finalText"].(string); !strings.HasPrefix(ft, "Tool said: ") || !strings.Contains(ft, `"sessions"`) {
		t.Errorf("the model's call of %s did not get the session's MCP server's answer: finalText %q", listTool, ft)
	}
	mu.Lock()
	wasDeferred, names := deferred, offered
	mu.Unlock()
	for _, want := range []string{listTool, directTool} {
		if !slices.Contains(names, want) {
			t.Errorf("the session's MCP server's tool %s is not offered to the model: %v", want, names)
		}
	}
	if wasDeferred {
		if prompt := requestFor(t, e.api, "MCPCHECK"); !bytes.Contains(prompt.Body, []byte(directTool)) {
			t.Errorf("the prompt's request neither offers nor names the deferred tool %s: tools %v", directTool, toolNames(prompt))
		}
		t.Logf("the CLI deferred the MCP tools; ToolSearch loaded them")
	}
	e.api.SetHandler(nil)

	// strictMcpConfig alone (no servers) starts too, and no MCP tool is
	// offered or named (deferred) anywhere in the request.
	sid2, _ := e.create(t, ctx, map[string]any{"strictMcpConfig": true})
	if res, _ := e.query(t, ctx, sid2, "STRICTONLY"); res.IsError {
		t.Fatalf("strict-only query: %s", text(res))
	}
	if r := requestFor(t, e.api, "STRICTONLY"); bytes.Contains(r.Body, []byte("mcp__")) {
		t.Errorf("strictMcpConfig without servers still offers MCP tools: %v", toolNames(r))
	}
}

// firstUserText is the text of the first user message of r: the prompt that
// started the turn, also in the requests that carry tool results.
func firstUserText(r *fakeapi.Request) string {
	for _, m := range r.Messages {
		if m.Role == "user" {
			return m.Text()
		}
	}
	return ""
}

func TestE2EResumeAndFork(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, _ := e.create(t, ctx, nil)
	if res, out := e.query(t, ctx, a, "first in A"); res.IsError || out["finalText"] != "Hello from fake API (n_messages=1)" {
		t.Fatalf("A: %s", text(res))
	}
	csidA, _ := e.info(t, ctx, a)["claudeSessionId"].(string)
	// Closing A ends its CLI, which writes the transcript.
	if res, _ := e.call(t, ctx, "claude_session_close", map[string]any{"sessionId": a}, nil); res.IsError {
		t.Fatalf("close A: %s", text(res))
	}

	b, out := e.create(t, ctx, map[string]any{"resumeSessionId": csidA})
	if out["claudeSessionId"] != csidA {
		t.Errorf("B's claudeSessionId at create = %v, want A's %s", out["claudeSessionId"], csidA)
	}
	res, out := e.query(t, ctx, b, "second in B")
	if res.IsError {
		t.Fatalf("B: %s", text(res))
	}
	if n := requestFor(t, e.api, "second in B").ConversationLen(); n < 3 {
		t.Errorf("B's request holds %d messages; A's history was not resumed", n)
	}
	if out["claudeSessionId"] != csidA {
		t.Errorf("resumed B reports claudeSessionId %v, want A's %s", out["claudeSessionId"], csidA)
	}

	c, cout := e.create(t, ctx, map[string]any{"resumeSessionId": csidA, "forkSession": true})
	res, out = e.query(t, ctx, c, "third in fork C")
	if res.IsError {
		t.Fatalf("C: %s", text(res))
	}
	csidC, _ := out["claudeSessionId"].(string)
	if csidC == "" || csidC == csidA {
		t.Errorf("the fork reports claudeSessionId %q, want a new id (A's is %s)", csidC, csidA)
	}
	if n := requestFor(t, e.api, "third in fork C").ConversationLen(); n < 3 {
		t.Errorf("the fork's request holds %d messages; the history was not copied", n)
	}
	if got := e.info(t, ctx, c)["claudeSessionId"]; got != csidC {
		t.Errorf("list shows the fork's claudeSessionId %v, want %s", got, csidC)
	}
	if cout["claudeSessionId"] != csidC {
		t.Errorf("the fork's claudeSessionId at create (%v) differs from the one it runs under (%s)", cout["claudeSessionId"], csidC)
	}

	res, _ = e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "forkSession": true}, nil)
	wantToolError(t, "forkSession without resumeSessionId", res, "resumeSessionId")
	res, _ = e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "resumeSessionId": "not-a-uuid"}, nil)
	wantToolError(t, "malformed resumeSessionId", res, "UUID")
}

func TestE2EAllowedRoots(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	inside := filepath.Join(root, "work")
	outside := t.TempDir()
	link := filepath.Join(root, "escape")
	if err := os.Mkdir(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	symlinks := os.Symlink(outside, link) == nil
	e := startE2E(t, e2eOptions{args: []string{"--allowed-roots", root}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	res, _ := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": outside}, nil)
	wantToolError(t, "cwd outside the roots", res, "outside the directories this server allows", root)
	if symlinks {
		res, _ = e.call(t, ctx, "claude_session_create", map[string]any{"cwd": link}, nil)
		wantToolError(t, "cwd through a symlink that leaves the roots", res, "outside", root)
	}
	res, _ = e.call(t, ctx, "claude_session_create", map[string]any{"cwd": inside, "addDirs": []string{outside}}, nil)
	wantToolError(t, "addDirs entry outside the roots", res, "addDirs entry", "outside", root)
	// The default cwd is the server's (outside the roots).
	res, _ = e.call(t, ctx, "claude_session_create", map[string]any{}, nil)
	wantToolError(t, "default cwd outside the roots", res, "outside")
	res, _ = e.call(t, ctx, "claude_direct_query", map[string]any{"cwd": outside, "prompt": "hi"}, nil)
	wantToolError(t, "direct query outside the roots", res, "outside")
	if n := len(e.api.Requests()); n != 0 {
		t.Errorf("refused creates reached the API (%d requests)", n)
	}

	_, out := e.create(t, ctx, map[string]any{"cwd": inside, "addDirs": []string{root}})
	if out["cwd"] != inside || out["active"] != true {
		t.Errorf("create inside the roots: %v", out)
	}
}

func TestE2EMaxDepth(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{env: map[string]string{depthEnv: "2"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, _ := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd}, nil)
	wantToolError(t, "create at depth 2", res, "nested", "--max-depth is 2")
	res, _ = e.call(t, ctx, "claude_direct_query", map[string]any{"cwd": e.cwd, "prompt": "hi"}, nil)
	wantToolError(t, "direct query at depth 2", res, "nested")
	if n := len(e.api.Requests()); n != 0 {
		t.Errorf("a refused create reached the API (%d requests)", n)
	}
}

func TestE2EAllowedPermissionModes(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{args: []string{"--allowed-permission-modes", "default,plan"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, _ := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "permissionMode": "acceptEdits"}, nil)
	wantToolError(t, "create with acceptEdits", res, `"acceptEdits" is not allowed`, "default, plan")
	res, _ = e.call(t, ctx, "claude_direct_query", map[string]any{"cwd": e.cwd, "permissionMode": "bypassPermissions", "prompt": "hi"}, nil)
	wantToolError(t, "direct query with bypassPermissions", res, "not allowed", "default, plan")

	sid, _ := e.create(t, ctx, map[string]any{"permissionMode": "default"})
	res, _ = e.call(t, ctx, "claude_chat_mode", map[string]any{"sessionId": sid, "permissionMode": "bypassPermissions"}, nil)
	wantToolError(t, "switch to bypassPermissions", res, `"bypassPermissions" is not allowed`, "default, plan")
	if m := e.info(t, ctx, sid)["permissionMode"]; m != "default" {
		t.Errorf("after a refused switch the mode is %v", m)
	}
	if res, out := e.call(t, ctx, "claude_chat_mode", map[string]any{"sessionId": sid, "permissionMode": "plan"}, nil); res.IsError || out["permissionMode"] != "plan" {
		t.Errorf("switch to plan: %s", text(res))
	}
}

// TestE2EBypassModeAndDepthEnv switches a session to bypassPermissions
// (allowed by default): a Bash tool then runs without a question, and it
// sees CLAUDE_SUBAGENT_DEPTH one deeper than the server's.
func TestE2EBypassModeAndDepthEnv(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: noElicitation(t), env: map[string]string{depthEnv: "0"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sid, _ := e.create(t, ctx, nil)
	if res, out := e.call(t, ctx, "claude_chat_mode", map[string]any{"sessionId": sid, "permissionMode": "bypassPermissions"}, nil); res.IsError || out["permissionMode"] != "bypassPermissions" {
		t.Fatalf("switch to bypassPermissions: %s", text(res))
	}
	res, out := e.query(t, ctx, sid, "TOOL_BASH[touch bypass.txt && echo depth=$CLAUDE_SUBAGENT_DEPTH]")
	if res.IsError || out["finalText"] != "Tool said: depth=1" {
		t.Errorf("query: isError=%v finalText=%q", res.IsError, out["finalText"])
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "bypass.txt")); err != nil {
		t.Errorf("the Bash command did not run: %v", err)
	}
	if m := e.info(t, ctx, sid)["permissionMode"]; m != "bypassPermissions" {
		t.Errorf("list shows permissionMode %v", m)
	}
}

func TestE2EProfiles(t *testing.T) {
	t.Parallel()
	alt, err := fakeapi.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(alt.Close)
	const token = "sk-alt-SECRET-7f3c9d21e8"
	dir := t.TempDir()
	profiles := filepath.Join(dir, "profiles.json")
	doc := `{"profiles": {"alt": {"baseUrl": "` + alt.URL() + `", "apiKeyEnv": "E2E_ALT_KEY"}}}`
	if err := os.WriteFile(profiles, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	e := startE2E(t, e2eOptions{args: []string{"--profiles", profiles}, env: map[string]string{"E2E_ALT_KEY": token}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	res, _ := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd, "profile": "nope"}, nil)
	wantToolError(t, "unknown profile", res, `unknown profile "nope"`, "alt")

	sid, _ := e.create(t, ctx, map[string]any{"profile": "alt"})
	if res, out := e.query(t, ctx, sid, "via profile"); res.IsError || out["finalText"] != "Hello from fake API (n_messages=1)" {
		t.Fatalf("query: %s", text(res))
	}
	if p := e.info(t, ctx, sid)["profile"]; p != "alt" {
		t.Errorf("list shows profile %v", p)
	}
	altReqs := alt.MessageRequests()
	if len(altReqs) == 0 {
		t.Fatal("the profile's API got no /v1/messages request")
	}
	if k := altReqs[0].Header.Get("X-Api-Key"); k != token {
		t.Errorf("the profile's API saw x-api-key %q, want the profile's token", k)
	}
	if n := len(e.api.MessageRequests()); n != 0 {
		t.Errorf("the default API got %d /v1/messages requests from a profile session", n)
	}

	// Stop the server, then look for the token in what it wrote.
	e.stdin.Close()
	select {
	case <-e.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not exit after stdin closed")
	}
	db := filepath.Join(e.home, "state", "sessions.db")
	for _, f := range []string{e.logPath, db, db + "-wal"} {
		data, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) && f == db+"-wal" {
			continue // checkpointed at the close
		}
		if err != nil {
			t.Errorf("reading %s: %v", f, err)
			continue
		}
		if bytes.Contains(data, []byte(token)) {
			t.Errorf("%s holds the profile's token", f)
		}
	}
}

// TestE2EProfileMissingKey: a profile naming an unset variable stops the
// server at startup with an error naming the variable.
func TestE2EProfileMissingKey(t *testing.T) {
	t.Parallel()
	claude := e2eenv.FindClaude(t)
	bin := serverBinary(t)
	dir := t.TempDir()
	profiles := filepath.Join(dir, "profiles.json")
	if err := os.WriteFile(profiles, []byte(`{"profiles": {"gw": {"baseUrl": "http://127.0.0.1:9", "apiKeyEnv": "E2E_UNSET_PROFILE_KEY"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--claude-path", claude, "--profiles", profiles, "--store", filepath.Join(dir, "s.db"))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "E2E_UNSET_PROFILE_KEY=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdin = strings.NewReader("") // were it to start, it would stop at EOF with status 0
	err := cmd.Run()
	var xe *exec.ExitError
	if !errors.As(err, &xe) || xe.ExitCode() == 0 {
		t.Fatalf("the server started despite the missing key: err=%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "E2E_UNSET_PROFILE_KEY") || !strings.Contains(stderr.String(), "gw") {
		t.Errorf("the error does not name the profile and the variable:\n%s", stderr.String())
	}
}
