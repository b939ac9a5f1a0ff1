package mcptools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/agentfile"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// agentEnv is a server over the fake CLI that serves agents from its own
// user, project and further directories and operator file, all under one
// temporary directory. Every CLI start appends its command line to
// argsLog; the server's log is in logs.
type agentEnv struct {
	mgr                      *sessions.Manager
	cs                       *mcp.ClientSession
	rec                      *mcptest.Recorder // the client's notifications
	agents                   *Agents
	user, project, dir, file string // project is the project's agents directory
	projectRoot              string
	argsLog                  string
	logs                     *testkit.Buffer
}

// newAgentEnv makes the directories; serve starts the server.
func newAgentEnv(t *testing.T) *agentEnv {
	t.Helper()
	root := t.TempDir()
	e := &agentEnv{user: filepath.Join(root, "user"), projectRoot: filepath.Join(root, "proj"), dir: filepath.Join(root, "dir"),
		file: filepath.Join(root, "agents.yaml"), argsLog: filepath.Join(root, "args.jsonl"), logs: &testkit.Buffer{}}
	e.project = filepath.Join(e.projectRoot, ".claude", "agents")
	for _, d := range []string{e.user, e.project, e.dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// serve starts the server, with every source and at most max agents (0:
// DefaultMaxTools), its client recording tools/list_changed.
func (e *agentEnv) serve(t *testing.T, protocol string, scfg sessions.Config, max int) {
	t.Helper()
	if max == 0 {
		max = DefaultMaxAgentTools
	}
	cfg := agentfile.Config{Sources: agentfile.AllSources, UserDir: e.user, Project: e.projectRoot, Dirs: []string{e.dir}, Max: max}
	if _, err := os.Stat(e.file); err == nil {
		cfg.File = e.file // else no warning about it
	}
	e.agents = NewAgents(AgentOptions{
		Config: cfg,
		Watch:  agentfile.WatchOptions{Tick: make(chan time.Time)}, // scans only on Rescan
		Logger: slog.New(slog.NewTextHandler(e.logs, nil)),
	})
	t.Cleanup(e.agents.Close)
	path, env := fakecli.Command(t)
	env[fakecli.EnvArgsLog] = e.argsLog
	maps.Copy(env, scfg.Env)
	scfg.CLIPath, scfg.Env = path, env
	e.mgr = sessions.NewManager(scfg)
	t.Cleanup(e.mgr.Shutdown)
	e.rec = mcptest.NewToolsRecorder("agents", nil)
	e.cs = connect(t, NewServer(e.mgr, Options{Agents: e.agents}), e.rec, protocol)
}

// connect connects a client (rec's, or a plain one for nil) to srv.
func connect(t *testing.T, srv *mcp.Server, rec *mcptest.Recorder, protocol string) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	if rec == nil {
		rec = mcptest.NewRecorder("plain", nil)
	}
	cs, err := rec.Connect(context.Background(), ct, protocol)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and decodes its structured result, which must match
// the tool's output schema from tools/list (the core encodes results
// itself).
func (e *agentEnv) call(t *testing.T, name string, args any, meta mcp.Meta) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := e.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &out)
	if tool := e.tools(t)[name]; res.StructuredContent != nil && tool != nil && tool.OutputSchema != nil {
		var schema jsonschema.Schema
		sb, _ := json.Marshal(tool.OutputSchema)
		if err := json.Unmarshal(sb, &schema); err != nil {
			t.Fatalf("%s's output schema: %v", name, err)
		}
		r, err := schema.Resolve(nil)
		if err != nil {
			t.Fatalf("%s's output schema: %v", name, err)
		}
		if err := r.Validate(out); err != nil {
			t.Errorf("%s: the structured result does not match the tool's output schema: %v\n%.500s", name, err, b)
		}
	}
	return res, out
}

// plain is a server without agent tools: its tools/list and instructions.
func plain(t *testing.T) ([]*mcp.Tool, string) {
	t.Helper()
	cs := connect(t, NewServer(sessions.NewManager(sessions.Config{}), Options{}), nil, "")
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools, cs.InitializeResult().Instructions
}

// writeAgent writes an agent file: front matter lines, then the prompt.
func writeAgent(t *testing.T, dir, file, prompt string, front ...string) string {
	t.Helper()
	path := filepath.Join(dir, file)
	text := "---\n" + strings.Join(front, "\n") + "\n---\n" + prompt + "\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tools returns tools/list by name.
func (e *agentEnv) tools(t *testing.T) map[string]*mcp.Tool {
	t.Helper()
	res, err := e.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool
	}
	return out
}

// agentToolNames are the names in tools that are not built-in tools.
func agentToolNames(tools map[string]*mcp.Tool) []string {
	var names []string
	for name := range tools {
		if !slices.ContainsFunc(Tools(), func(b *mcp.Tool) bool { return b.Name == name }) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// starts returns the command lines of the CLI starts so far.
func (e *agentEnv) starts(t *testing.T) [][]string {
	t.Helper()
	data, err := os.ReadFile(e.argsLog)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out [][]string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var args []string
		if err := json.Unmarshal(sc.Bytes(), &args); err != nil {
			t.Fatalf("args log: %v", err)
		}
		out = append(out, args)
	}
	return out
}

// flagOf returns the value of --name=value in args, and whether it is there.
func flagOf(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// definitionOf decodes the agent name in the initialize request the fake
// CLI logged after its command line (agents go there, never on a command
// line: see fakecli's logArgs).
func definitionOf(t *testing.T, args []string, name string) map[string]any {
	t.Helper()
	raw, ok := flagOf(args, "initialize")
	if !ok {
		t.Fatalf("no initialize request after %q", args)
	}
	var init struct {
		Agents map[string]map[string]any `json:"agents"`
	}
	if err := json.Unmarshal([]byte(raw), &init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	def, ok := init.Agents[name]
	if !ok || len(init.Agents) != 1 {
		t.Fatalf("initialize = %s, want the agent %q alone", raw, name)
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--agents") {
			t.Errorf("the agents are on the command line: %.200s", a)
		}
	}
	return def
}

// TestAgentToolsListed: the agents of every source are tools, one each,
// with the precedence user < project < dirs < file; a file that fails to
// parse is skipped, unknown fields dropped, a name taken by a built-in
// tool or not valid as a tool name changed, each with one warning naming
// the file and line, logged once.
func TestAgentToolsListed(t *testing.T) {
	e := newAgentEnv(t)
	userReviewer := writeAgent(t, e.user, "reviewer.md", "User prompt.", "name: reviewer", "description: User reviewer")
	writeAgent(t, e.project, "reviewer.md", "Project prompt.", "name: reviewer", "description: Project reviewer")
	bad := writeAgent(t, e.project, "bad.md", "Body.", "name: bad", "description: y", "  model: z")
	odd := writeAgent(t, e.project, "odd.md", "Odd prompt.", "name: odd", "description: Odd one", "flavour: mint")
	writeAgent(t, e.project, "spaced.md", "Spaced prompt.", "name: code reviewer", "description: Spaced name")
	dirTester := writeAgent(t, e.dir, "tester.md", "Dir prompt.", "name: tester", "description: Dir tester")
	writeFile(t, e.file, "tester:\n  description: File tester\n  prompt: File prompt.\n"+
		"claude_session_create:\n  description: Shadows a built-in\n  prompt: P.\n")
	e.serve(t, "2025-11-25", sessions.Config{}, 0)

	tools := e.tools(t)
	want := []string{"claude_session_create_2", "code_reviewer", "odd", "reviewer", "tester"}
	if got := agentToolNames(tools); !slices.Equal(got, want) {
		t.Fatalf("agent tools = %v, want %v", got, want)
	}
	for name, desc := range map[string]string{"reviewer": "Project reviewer", "tester": "File tester", "odd": "Odd one",
		"code_reviewer": "Spaced name", "claude_session_create_2": "Shadows a built-in"} {
		if got := tools[name].Description; got != desc {
			t.Errorf("%s: description %q, want %q", name, got, desc)
		}
	}
	if ir := e.cs.InitializeResult(); ir == nil || !strings.Contains(ir.Instructions, "Tools without the claude_ prefix run the operator's Claude Code agents") {
		t.Errorf("the instructions do not explain the agent tools")
	}
	builtin := Tools()[0]
	if got := tools["claude_session_create"]; got == nil || got.Description != builtin.Description {
		t.Errorf("the built-in claude_session_create was changed: %v", got)
	}
	logs := strings.ReplaceAll(e.logs.String(), `\"`, `"`)
	for _, w := range []string{
		userReviewer + ":2: agent \"reviewer\" (user) is shadowed by",
		dirTester + ":2: agent \"tester\" (dirs) is shadowed by",
		bad + ":4: skipped: invalid YAML front matter",
		odd + ":4: unknown field \"flavour\"",
		e.file + ":4: agent \"claude_session_create\": tool name \"claude_session_create\" is taken by the built-in tool",
		`spaced.md:2: agent "code reviewer": its name is not a valid tool name`,
	} {
		if n := strings.Count(logs, w); n != 1 {
			t.Errorf("the log holds %q %d times, want once:\n%s", w, n, logs)
		}
	}
	if strings.Count(logs, "level=WARN") != 6 {
		t.Errorf("want 6 warnings:\n%s", logs)
	}
	if e.agents.Rescan() || strings.ReplaceAll(e.logs.String(), `\"`, `"`) != logs {
		t.Errorf("a rescan of unchanged files changed something or logged again:\n%s", e.logs.String())
	}
	// A change elsewhere does not repeat the warnings that remain.
	writeAgent(t, e.dir, "new.md", "P.", "name: new", "description: New")
	if !e.agents.Rescan() {
		t.Fatal("the new agent was not seen")
	}
	if n := strings.Count(e.logs.String(), "level=WARN"); n != 6 {
		t.Errorf("after a change the log holds %d warnings, want the 6 once:\n%s", n, e.logs.String())
	}
}

// TestAgentToolsHiddenText: an agent's description reaches tools/list
// without control or invisible formatting characters (a right-to-left
// override, an escape sequence, a zero-width space, a tag character), and
// a file whose front matter does not parse ("name: [oops") is no tool.
func TestAgentToolsHiddenText(t *testing.T) {
	e := newAgentEnv(t)
	writeAgent(t, e.dir, "hidden.md", "P.", "name: hidden", `description: "Reviews code\u202E.sdrawkcab\e[8m\u200b\U000E0041"`)
	writeAgent(t, e.dir, "oops.md", "P.", "name: [oops", "description: d")
	e.serve(t, "2025-11-25", sessions.Config{}, 0)
	tools := e.tools(t)
	if got := agentToolNames(tools); !slices.Equal(got, []string{"hidden"}) {
		t.Errorf("agent tools = %v, want [hidden]", got)
	}
	if tools["hidden"] == nil {
		t.Fatal("no tool hidden")
	}
	if got, want := tools["hidden"].Description, "Reviews code.sdrawkcab[8m"; got != want {
		t.Errorf("description %q, want %q", got, want)
	}
	logs := e.logs.String()
	for _, w := range []string{"hidden.md:3: field description: 4 control or invisible formatting characters removed", "oops.md:2: skipped: invalid YAML front matter"} {
		if !strings.Contains(strings.ReplaceAll(logs, `\"`, `"`), w) {
			t.Errorf("no warning %q in the log:\n%s", w, logs)
		}
	}
}

// TestAgentToolsCap: beyond the cap the agents of the lowest-precedence
// sources are left out, named in one warning.
func TestAgentToolsCap(t *testing.T) {
	e := newAgentEnv(t)
	writeAgent(t, e.user, "a.md", "P.", "name: a", "description: A")
	writeAgent(t, e.user, "b.md", "P.", "name: b", "description: B")
	writeAgent(t, e.project, "c.md", "P.", "name: c", "description: C")
	writeAgent(t, e.dir, "d.md", "P.", "name: d", "description: D")
	e.serve(t, "2025-11-25", sessions.Config{}, 2)
	if got := agentToolNames(e.tools(t)); !slices.Equal(got, []string{"c", "d"}) {
		t.Errorf("agent tools = %v, want the project's and the directory's", got)
	}
	if logs := e.logs.String(); strings.Count(logs, "level=WARN") != 1 ||
		!strings.Contains(logs, `4 agents found, at most 2 exposed; not exposed: \"a\" (user), \"b\" (user)"`) {
		t.Errorf("want one warning naming a and b:\n%s", logs)
	}
}

// visibleSize is what a tool costs the host's model: its name,
// description and input schema as JSON.
func visibleSize(t *testing.T, tool *mcp.Tool) int {
	t.Helper()
	b, err := json.Marshal(visibleTool{Name: tool.Name, Description: tool.Description, InputSchema: tool.InputSchema})
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// TestAgentToolsSize: an agent tool is at most MaxAgentToolBytes of
// model-visible JSON, even with the longest name and a long description
// (cut, with its whitespace folded); and a server whose agent sources hold
// nothing lists exactly the tools of one without agents.
func TestAgentToolsSize(t *testing.T) {
	e := newAgentEnv(t)
	long := strings.Repeat("x", agentfile.MaxToolNameLen)
	desc := "Use this agent <when> the code needs a review.\n\n" + strings.Repeat("It reads every file and reports what is wrong. ", 40)
	writeAgent(t, e.dir, "long.md", "P.", "name: "+long, "description: "+yamlQuote(desc))
	writeAgent(t, e.dir, "short.md", "P.", "name: short", "description: Reviews code")
	e.serve(t, "2025-11-25", sessions.Config{}, 0)
	tools := e.tools(t)
	for _, name := range []string{long, "short"} {
		tool := tools[name]
		if tool == nil {
			t.Fatalf("no tool %s", name)
		}
		size := visibleSize(t, tool)
		t.Logf("%.10s…: %d bytes model-visible, description %q", name, size, tool.Description)
		if size > MaxAgentToolBytes {
			t.Errorf("%.10s…: %d bytes, over %d", name, size, MaxAgentToolBytes)
		}
	}
	if d := tools[long].Description; !strings.HasPrefix(d, "Use this agent <when> the code needs a review. It") || !strings.HasSuffix(d, "…") {
		t.Errorf("the long description, cut: %q", d)
	}
	if d := tools["short"].Description; d != "Reviews code" {
		t.Errorf("the short description: %q", d)
	}
	if in, _ := json.Marshal(tools["short"].InputSchema); !strings.Contains(string(in), `"required":["prompt"]`) {
		t.Errorf("input schema: %s", in)
	}

	empty := newAgentEnv(t)
	empty.serve(t, "2025-11-25", sessions.Config{}, 0)
	got, _ := json.Marshal(slices.Collect(maps.Values(empty.tools(t))))
	plainTools, instructions := plain(t)
	if len(agentToolNames(empty.tools(t))) != 0 || len(empty.tools(t)) != len(plainTools) {
		t.Errorf("with no agents, tools/list has %d tools, want %d", len(empty.tools(t)), len(plainTools))
	}
	if ir := empty.cs.InitializeResult(); ir == nil || ir.Instructions != instructions {
		t.Errorf("with no agents the instructions changed")
	}
	all, _ := json.Marshal(plainTools)
	if len(got) != len(all) {
		t.Errorf("with no agents, tools/list is %d bytes, want %d as without agent sources", len(got), len(all))
	}
}

// yamlQuote quotes s as a YAML double-quoted string (JSON's escapes are
// YAML's).
func yamlQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestAgentParams: the argument names checked are the input schema's, and
// those of agentArguments.
func TestAgentParams(t *testing.T) {
	var names []string
	for f := range reflect.TypeFor[agentArguments]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		names = append(names, name)
	}
	slices.Sort(names)
	if !slices.Equal(names, agentParams) {
		t.Errorf("agentArguments' fields %v, the schema's %v", names, agentParams)
	}
}

// TestAgentToolsHotReload: adding, changing and removing an agent file
// changes tools/list, and the client gets notifications/tools/list_changed
// each time, on both protocol eras.
func TestAgentToolsHotReload(t *testing.T) {
	for _, protocol := range []string{"2025-11-25", ""} {
		t.Run("protocol="+protocol, func(t *testing.T) {
			e := newAgentEnv(t)
			reviewer := writeAgent(t, e.project, "reviewer.md", "P.", "name: reviewer", "description: Reviews code")
			e.serve(t, protocol, sessions.Config{}, 0)
			if got := agentToolNames(e.tools(t)); !slices.Equal(got, []string{"reviewer"}) {
				t.Fatalf("agent tools = %v", got)
			}
			step := func(what string, change func(), check func(map[string]*mcp.Tool) bool) {
				t.Helper()
				e.rec.Reset()
				change()
				if !e.agents.Rescan() {
					t.Fatalf("%s: the rescan saw no change", what)
				}
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				if ev, err := e.rec.WaitEvents(ctx, "tools:list_changed"); err != nil {
					t.Fatalf("%s: %v (events %q)", what, err, ev)
				}
				if tools := e.tools(t); !check(tools) {
					t.Errorf("%s: agent tools %v", what, agentToolNames(tools))
				}
			}
			tester := filepath.Join(e.project, "tester.md")
			step("added", func() { writeAgent(t, e.project, "tester.md", "P.", "name: tester", "description: Runs tests") },
				func(tools map[string]*mcp.Tool) bool {
					return tools["tester"] != nil && tools["tester"].Description == "Runs tests"
				})
			step("changed", func() {
				writeAgent(t, e.project, "reviewer.md", "P.", "name: reviewer", "description: Reviews code, strictly")
			},
				func(tools map[string]*mcp.Tool) bool {
					return tools["reviewer"].Description == "Reviews code, strictly"
				})
			step("removed", func() {
				if err := os.Remove(tester); err != nil {
					t.Fatal(err)
				}
			}, func(tools map[string]*mcp.Tool) bool { return tools["tester"] == nil && tools["reviewer"] != nil })
			res, err := e.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "tester", Arguments: map[string]any{"prompt": "hi"}})
			if err == nil && !res.IsError {
				t.Errorf("a removed agent's tool still answers: %s", resText(res))
			}
			if err := os.Remove(reviewer); err != nil {
				t.Fatal(err)
			}
			e.agents.Close()
			if e.agents.Rescan() {
				t.Error("a closed Agents rescanned")
			}
		})
	}
}
