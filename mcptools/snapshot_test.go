package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

var update = flag.Bool("update", false, "rewrite testdata/toolsnaps")

// listTools connects an in-memory client to a server (no sessions are
// started) and returns tools/list.
func listTools(t *testing.T) []*mcp.Tool {
	t.Helper()
	srv := NewServer(sessions.NewManager(sessions.Config{}), Options{Version: "test"})
	st, ct := mcp.NewInMemoryTransports()
	ctx := t.Context()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "snap", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}

// TestToolSnapshots keeps every tool's definition (name, description,
// schemas, annotations) in testdata/toolsnaps so that nothing changes by
// accident. Run with -update to accept a change.
func TestToolSnapshots(t *testing.T) {
	dir := filepath.Join("..", "testdata", "toolsnaps")
	tools := listTools(t)
	seen := map[string]bool{}
	for _, tool := range tools {
		seen[tool.Name+".json"] = true
		got, err := json.MarshalIndent(tool, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(normalizeJSON(t, got), '\n')
		path := filepath.Join(dir, tool.Name+".json")
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("no snapshot for %s (%v); run go test ./mcptools -run TestToolSnapshots -update and commit it", tool.Name, err)
			continue
		}
		if !bytes.Equal(want, got) {
			t.Errorf("tool %s differs from its snapshot; if intended, rerun with -update:\n%s", tool.Name,
				lineDiff(path+" (snapshot)", tool.Name+" (tools/list)", string(want), string(got)))
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !seen[e.Name()] && !*update {
			t.Errorf("snapshot %s has no tool; delete it", e.Name())
		}
	}
}

// lineDiff is a unified diff, line by line with three lines of context,
// of want into got ("" when they are equal).
func lineDiff(wantName, gotName, want, got string) string {
	if want == got {
		return ""
	}
	a := strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	b := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	// lcs[i][j]: the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte // ' ', '-' or '+'
		line string
		i, j int // the line's index in a and b (before it, for the other side)
	}
	var ops []op
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, op{' ', a[i], i, j})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', a[i], i, j})
			i++
		default:
			ops = append(ops, op{'+', b[j], i, j})
			j++
		}
	}
	const context = 3
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", wantName, gotName)
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		// A hunk: from context lines before this change to context lines
		// after the last change that is at most 2*context lines further.
		start, end := max(0, k-context), k
		for n := k; n < len(ops) && n-end <= 2*context; n++ {
			if ops[n].kind != ' ' {
				end = n
			}
		}
		end = min(len(ops), end+context+1)
		var nA, nB int
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				nA++
			}
			if o.kind != '-' {
				nB++
			}
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", ops[start].i+1, nA, ops[start].j+1, nB)
		for _, o := range ops[start:end] {
			out.WriteByte(o.kind)
			out.WriteString(o.line)
			out.WriteByte('\n')
		}
		k = end
	}
	return out.String()
}

// TestLineDiff: changed, added and removed lines, with context, in hunks.
func TestLineDiff(t *testing.T) {
	lines := func(from, to int) string {
		var b strings.Builder
		for n := from; n <= to; n++ {
			fmt.Fprintf(&b, "line %d\n", n)
		}
		return b.String()
	}
	base := lines(1, 20)
	for _, tc := range []struct {
		name, got, want string
	}{
		{"equal", base, ""},
		{"changed", strings.Replace(base, "line 10\n", "line ten\n", 1),
			"--- a\n+++ b\n@@ -7,7 +7,7 @@\n line 7\n line 8\n line 9\n-line 10\n+line ten\n line 11\n line 12\n line 13\n"},
		{"added at the end", base + "line 21\n",
			"--- a\n+++ b\n@@ -18,3 +18,4 @@\n line 18\n line 19\n line 20\n+line 21\n"},
		{"removed at the start", lines(2, 20),
			"--- a\n+++ b\n@@ -1,4 +1,3 @@\n-line 1\n line 2\n line 3\n line 4\n"},
		{"two hunks", strings.Replace(strings.Replace(base, "line 2\n", "", 1), "line 18\n", "line 18\nnew\n", 1),
			"--- a\n+++ b\n@@ -1,5 +1,4 @@\n line 1\n-line 2\n line 3\n line 4\n line 5\n" +
				"@@ -16,5 +15,6 @@\n line 16\n line 17\n line 18\n+new\n line 19\n line 20\n"},
		{"close changes share a hunk", strings.Replace(strings.Replace(base, "line 5\n", "five\n", 1), "line 9\n", "nine\n", 1),
			"--- a\n+++ b\n@@ -2,11 +2,11 @@\n line 2\n line 3\n line 4\n-line 5\n+five\n line 6\n line 7\n line 8\n-line 9\n+nine\n line 10\n line 11\n line 12\n"},
	} {
		if d := lineDiff("a", "b", base, tc.got); d != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, d, tc.want)
		}
	}
}

// normalizeJSON sorts keys by round-tripping through a map.
func normalizeJSON(t *testing.T, b []byte) []byte {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestToolDefinitions checks what every tool must have.
func TestToolDefinitions(t *testing.T) {
	tools := listTools(t)
	want := []string{"claude_session_create", "claude_session_close", "claude_chat_query", "claude_chat_interrupt",
		"claude_chat_model", "claude_chat_mode", "claude_direct_query", "claude_session_list", "claude_chat_wait", "claude_session_history"}
	names := map[string]*mcp.Tool{}
	for _, tool := range tools {
		names[tool.Name] = tool
	}
	for _, n := range want {
		if names[n] == nil {
			t.Errorf("tool %s missing", n)
		}
	}
	for _, tool := range tools {
		if !strings.HasPrefix(tool.Name, "claude_") {
			t.Errorf("%s: name lacks the claude_ prefix", tool.Name)
		}
		// An example where there is more to pass than the session's id.
		if _, onlyID := tool.InputSchema.(map[string]any)["properties"].(map[string]any)["sessionId"]; len(tool.Description) < 40 ||
			!strings.Contains(tool.Description, "Example: {") && !(onlyID && len(tool.InputSchema.(map[string]any)["properties"].(map[string]any)) <= 2) {
			t.Errorf("%s: description must say what it does and give an example: %q", tool.Name, tool.Description)
		}
		if tool.Title == "" {
			t.Errorf("%s: no title", tool.Name)
		}
		// Annotations are left out only where the protocol's defaults
		// (destructive, open world, not read-only) are what the tool is,
		// or err on the side of care (claude_session_rewind: destructive,
		// its listing within 450 bytes; claude_session_land: destructive,
		// open world for a pull request).
		if tool.Annotations == nil && tool.Name != "claude_chat_query" && tool.Name != "claude_direct_query" && tool.Name != "claude_chat_steer" &&
			tool.Name != "claude_session_rewind" && tool.Name != "claude_session_land" {
			t.Errorf("%s: no annotations", tool.Name)
		}
		if tool.OutputSchema == nil {
			t.Errorf("%s: no output schema", tool.Name)
		}
		in, _ := json.Marshal(tool.InputSchema)
		var schema map[string]any
		_ = json.Unmarshal(in, &schema)
		if schema["type"] != "object" {
			t.Errorf("%s: input schema type = %v", tool.Name, schema["type"])
		}
		for _, k := range []string{"anyOf", "oneOf", "allOf"} {
			if _, ok := schema[k]; ok {
				t.Errorf("%s: top-level %s in the input schema (some clients reject it)", tool.Name, k)
			}
		}
	}
	// Enumerations are real enums.
	in, _ := json.Marshal(names["claude_chat_mode"].InputSchema)
	if !strings.Contains(string(in), `"enum":["default","acceptEdits","plan","bypassPermissions","dontAsk","auto"]`) {
		t.Errorf("claude_chat_mode permissionMode is not an enum: %s", in)
	}
	if tool := names["claude_session_list"]; tool != nil && !tool.Annotations.ReadOnlyHint {
		t.Error("claude_session_list must be read-only")
	}
	// Destructive is the protocol's default, so an unset hint says it.
	if tool := names["claude_session_close"]; tool != nil && (tool.Annotations.ReadOnlyHint || (tool.Annotations.DestructiveHint != nil && !*tool.Annotations.DestructiveHint)) {
		t.Error("claude_session_close must be destructive")
	}
}

// TestDirectQueryListsEveryOption: claude_direct_query's schema lists every
// session option of claude_session_create and every parameter of
// claude_chat_query but the session's own, each of the same type, and
// nothing else.
func TestDirectQueryListsEveryOption(t *testing.T) {
	schemas := map[string]map[string]any{}
	for _, tool := range listTools(t) {
		b, _ := json.Marshal(tool.InputSchema)
		var s map[string]any
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		schemas[tool.Name], _ = s["properties"].(map[string]any)
	}
	direct := schemas["claude_direct_query"]
	want := map[string]any{}
	for _, from := range []string{"claude_session_create", "claude_chat_query"} {
		for name, p := range schemas[from] {
			if from == "claude_chat_query" && (name == "sessionId" || name == "effort" || name == "closeAfter") {
				continue // the session's, or the session option's
			}
			want[name] = typeOf(p)
		}
	}
	if len(want) < 30 {
		t.Fatalf("only %d parameters found: %v", len(want), want)
	}
	for name, typ := range want {
		if got, ok := direct[name]; !ok {
			t.Errorf("claude_direct_query does not list %s", name)
		} else if !reflect.DeepEqual(typeOf(got), typ) {
			t.Errorf("claude_direct_query's %s is %v, want %v", name, typeOf(got), typ)
		}
	}
	for name := range direct {
		if _, ok := want[name]; !ok {
			t.Errorf("claude_direct_query lists %s, which neither claude_session_create nor claude_chat_query takes", name)
		}
	}
}

// typeOf is a property schema's types, nested ones included, without its
// descriptions and enumerations.
func typeOf(v any) any {
	s, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for k, sub := range s {
		switch k {
		case "description", "enum":
		case "properties":
			props := map[string]any{}
			for name, p := range sub.(map[string]any) {
				props[name] = typeOf(p)
			}
			out[k] = props
		case "items", "additionalProperties":
			out[k] = typeOf(sub)
		default:
			out[k] = sub
		}
	}
	return out
}

// TestToolSurfaceSize pins what tools/list costs every host session: at
// most 9 KB in all (8 KB until claude_session_land and
// claude_session_rewind), and at most 6.25 KB that the model sees
// (descriptions and input schemas; 5 KB until claude_direct_query's schema
// listed every session option, which costs about 1.2 KB however lean). The
// sizes of each tool are logged (go test -v).
func TestToolSurfaceSize(t *testing.T) {
	const maxTotal, maxVisible = 9 << 10, 6400
	total, visible := 0, 0
	for _, tool := range listTools(t) {
		all, _ := json.Marshal(tool)
		in, _ := json.Marshal(tool.InputSchema)
		total += len(all)
		visible += len(tool.Description) + len(in)
		t.Logf("%-24s %5d bytes, model-visible %5d", tool.Name, len(all), len(tool.Description)+len(in))
	}
	if total > maxTotal || visible > maxVisible {
		t.Errorf("tools/list is %d bytes (at most %d), the model-visible part %d (at most %d)", total, maxTotal, visible, maxVisible)
	}
	t.Logf("tools/list: %d bytes, model-visible %d", total, visible)
}

// TestUnknownArguments: an argument a tool does not take is refused by
// name (the schemas do not say additionalProperties: false), also by
// claude_direct_query.
func TestUnknownArguments(t *testing.T) {
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{})
	res, _ := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir(), "modle": "opus"}, nil)
	if !res.IsError || !strings.Contains(resText(res), `unknown parameter "modle" for claude_session_create`) || !strings.Contains(resText(res), "model") {
		t.Errorf("a misspelt option: %s", resText(res))
	}
	res, _ = f.call(t, "claude_direct_query", map[string]any{"prompt": "hi", "permisionMode": "plan"}, nil)
	if !res.IsError || !strings.Contains(resText(res), `unknown parameter "permisionMode"`) {
		t.Errorf("a misspelt option of a direct query: %s", resText(res))
	}
	if n := f.mgr.Count(); n != 0 {
		t.Errorf("a refused call made %d session(s)", n)
	}
	res, out := f.call(t, "claude_direct_query", map[string]any{"prompt": "hi", "cwd": t.TempDir(), "permissionMode": "plan", "maxTurns": 3}, nil)
	if res.IsError || out["finalText"] == nil {
		t.Errorf("a direct query with session options: %s", resText(res))
	}
}

// TestWorktreeForms: worktree is a string, "auto" for a name the server
// picks, else the name. The result reports the ignored files
// .worktreeinclude names that the worktree got.
func TestWorktreeForms(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed: %v", err)
	}
	repo := t.TempDir()
	for name, content := range map[string]string{".gitignore": ".env\n", ".worktreeinclude": ".env\n", ".env": "KEY=1\n"} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", ".gitignore"}, {"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "first"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{})
	for _, tc := range []struct{ worktree, want string }{{"auto", "session-"}, {"named", "named"}} {
		res, out := f.call(t, "claude_session_create", map[string]any{"cwd": repo, "worktree": tc.worktree}, nil)
		w, _ := out["worktree"].(map[string]any)
		path, _ := w["path"].(string)
		if res.IsError || !strings.HasPrefix(filepath.Base(path), tc.want) || filepath.Dir(path) != filepath.Join(repo, ".claude", "worktrees") {
			t.Errorf("worktree %q: %s %v, want a worktree %s… in %s/.claude/worktrees", tc.worktree, resText(res), w, tc.want, repo)
		}
		copied, _ := w["copied"].(map[string]any)
		if files, _ := copied["files"].([]any); copied["count"] != 1.0 || len(files) != 1 || files[0] != ".env" ||
			!strings.Contains(resText(res), "got 1 git-ignored file(s) that .worktreeinclude names") {
			t.Errorf("worktree %q: copied %v; %s", tc.worktree, w["copied"], resText(res))
		}
		if res, _ := f.call(t, "claude_session_close", map[string]any{"sessionId": out["sessionId"]}, nil); res.IsError {
			t.Errorf("close: %s", resText(res))
		}
	}
}

// TestEverySchemaTyped: every subschema of every input and output schema
// says its one type, as the portability check of the MCP Inspector wants
// it (mcp-inspector --cli --strict; TestInspectorSchemaPortability in
// e2e runs it on the binary): no bare true or {} (an
// untyped schema), no type unions (["object", "string"]: clients that map
// tool schemas onto a single-type dialect, such as Gemini's function
// declarations, reject them or drop the constraint), no anyOf/oneOf/allOf
// and no $ref.
func TestEverySchemaTyped(t *testing.T) {
	var walk func(tool, where string, v any)
	walk = func(tool, where string, v any) {
		switch s := v.(type) {
		case bool:
			t.Errorf("%s: %s is the bare schema %v", tool, where, s)
		case map[string]any:
			typ, typed := s["type"]
			_, enum := s["enum"]
			if !typed && !enum {
				t.Errorf("%s: %s has no type: %v", tool, where, s)
			}
			if _, one := typ.(string); typed && !one {
				t.Errorf("%s: %s has the type union %v: give it one type", tool, where, typ)
			}
			for _, k := range []string{"anyOf", "oneOf", "allOf", "$ref", "$defs"} {
				if _, ok := s[k]; ok {
					t.Errorf("%s: %s has %s", tool, where, k)
				}
			}
			if props, ok := s["properties"].(map[string]any); ok {
				for k, p := range props {
					walk(tool, where+"."+k, p)
				}
			}
			for _, k := range []string{"items", "additionalProperties"} {
				if sub, ok := s[k]; ok && sub != false {
					walk(tool, where+"["+k+"]", sub)
				}
			}
		}
	}
	for _, tool := range listTools(t) {
		for name, schema := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
			b, _ := json.Marshal(schema)
			var v any
			_ = json.Unmarshal(b, &v)
			walk(tool.Name, name, v)
		}
	}
}

// TestValidationErrors covers bad input that never reaches a process.
func TestValidationErrors(t *testing.T) {
	srv := NewServer(sessions.NewManager(sessions.Config{}), Options{Version: "test"})
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "v", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"claude_chat_query", map[string]any{"sessionId": "nope", "prompt": "hi"}, "no open session has id"},
		{"claude_chat_query", map[string]any{"sessionId": "nope", "prompt": "hi"}, "create one with claude_session_create (claude_session_list shows the open ones)"},
		{"claude_chat_query", map[string]any{"sessionId": "nope", "prompt": "  "}, "prompt is empty"},
		{"claude_chat_query", map[string]any{"sessionId": "nope"}, "prompt"},
		{"claude_session_create", map[string]any{"cwd": "relative/dir"}, "not an absolute path"},
		{"claude_session_create", map[string]any{"cwd": "/does/not/exist"}, "does not exist"},
		{"claude_session_create", map[string]any{"cwd": file}, "is not a directory"},
		{"claude_session_create", map[string]any{"permissionMode": "yolo"}, "permissionMode"},
		{"claude_session_create", map[string]any{"model": "bad model!"}, "model"},
		{"claude_session_create", map[string]any{"maxTurns": -1}, "maxTurns"},
		{"claude_session_create", map[string]any{"forkSession": true}, "forkSession needs resumeSessionId"},
		{"claude_session_create", map[string]any{"resumeSessionId": "abc"}, "invalid resumeSessionId"},
		{"claude_session_create", map[string]any{"allowedTools": []string{"Bash(\n)"}}, "allowedTools"},
		{"claude_session_create", map[string]any{"mcpServers": map[string]any{"x": map[string]any{"args": []string{"a"}}}}, "needs \"command\""},
		{"claude_session_create", map[string]any{"profile": "nope"}, "unknown profile"},
		{"claude_session_create", map[string]any{"worktree": true}, `worktree true: worktree is a string: a name, or "auto" for one the server picks`},
		{"claude_direct_query", map[string]any{"prompt": "hi", "worktree": false}, `worktree false: worktree is a string`},
		{"claude_session_create", map[string]any{"settings": file}, "settings is an object; pass the path of a settings file as settingsFile"},
		{"claude_session_create", map[string]any{"settingsFile": "settings.json"}, `invalid settingsFile "settings.json": not an absolute path`},
		{"claude_direct_query", map[string]any{"prompt": "hi", "settingsFile": file + ".missing"}, "no such file"},
		{"claude_session_close", map[string]any{"sessionId": "nope"}, "no open session has id"},
		{"claude_chat_interrupt", map[string]any{"sessionId": "nope"}, "no open session has id"},
		{"claude_chat_model", map[string]any{"sessionId": "nope", "model": "opus"}, "no open session has id"},
		{"claude_chat_mode", map[string]any{"sessionId": "nope", "permissionMode": "plan"}, "no open session has id"},
		{"claude_direct_query", map[string]any{"prompt": ""}, "prompt is empty"},
		{"claude_session_list", map[string]any{"sessionId": "nope"}, "no open session has id"},
	}
	for _, c := range cases {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Errorf("%s %v: protocol error %v, want a tool error", c.tool, c.args, err)
			continue
		}
		var text string
		for _, ct := range res.Content {
			if tc, ok := ct.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		if !res.IsError || !strings.Contains(text, c.want) {
			t.Errorf("%s %v: isError=%v text=%q, want an error containing %q", c.tool, c.args, res.IsError, text, c.want)
		}
	}
}
