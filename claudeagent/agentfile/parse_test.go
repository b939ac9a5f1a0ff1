package agentfile

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// definitionJSON is the --agents entry of a, compacted.
func definitionJSON(t *testing.T, a *Agent) string {
	t.Helper()
	raw, err := a.AgentsJSON()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || m[a.Name] == nil {
		t.Fatalf("AgentsJSON = %s, want one entry %q", raw, a.Name)
	}
	return string(m[a.Name])
}

func warningTexts(ws []Warning) []string {
	var s []string
	for _, w := range ws {
		s = append(s, w.String())
	}
	return s
}

func TestParseAgentFile(t *testing.T) {
	for _, tc := range []struct {
		name     string
		file     string
		wantName string
		want     string   // the --agents entry
		warns    []string // substrings, one per warning, in order
	}{
		{
			name:     "minimal",
			file:     "---\nname: reviewer\ndescription: Reviews code\n---\nYou review code.\n",
			wantName: "reviewer",
			want:     `{"description":"Reviews code","prompt":"You review code."}`,
		},
		{
			name: "tools as a string",
			file: "---\nname: r\ndescription: d\ntools: Read, Grep Bash(git log:*)\n---\np",
			want: `{"description":"d","prompt":"p","tools":["Read","Grep","Bash(git log:*)"]}`,
		},
		{
			name: "tools as a list",
			file: "---\nname: r\ndescription: d\ntools:\n  - Read\n  - Grep, Glob\ndisallowedTools: [Bash]\n---\np",
			want: `{"description":"d","prompt":"p","tools":["Read","Grep","Glob"],"disallowedTools":["Bash"]}`,
		},
		{
			name: "tools star is all",
			file: "---\nname: r\ndescription: d\ntools: \"*\"\n---\np",
			want: `{"description":"d","prompt":"p"}`,
		},
		{
			name: "disallowedTools star is ignored, as by the CLI",
			file: "---\nname: r\ndescription: d\ndisallowedTools: [Bash, \"*\"]\n---\np",
			want: `{"description":"d","prompt":"p"}`,
		},
		{
			name: "tools empty is none",
			file: "---\nname: r\ndescription: d\ntools:\n---\np",
			want: `{"description":"d","prompt":"p","tools":[]}`,
		},
		{
			name: "tools item not a string",
			file: "---\nname: r\ndescription: d\ntools:\n  - Read\n  - {a: 1}\n---\np",
			want: `{"description":"d","prompt":"p","tools":["Read"]}`,
			warns: []string{
				"f.md:6: field tools: an item ignored: not a string",
			},
		},
		{
			name: "CRLF, BOM, written \\n and a colon in a plain value",
			file: "\uFEFF---\r\nname: r\r\ndescription: Use it when: the code changed\\nand more\r\nmodel: Inherit\r\n---\r\n\r\nLine one.\r\nLine two.\r\n",
			want: `{"description":"Use it when: the code changed\nand more","prompt":"Line one.\nLine two.","model":"inherit"}`,
		},
		{
			// Invalid YAML, read as the CLI reads it: the value quoted.
			name: "plain value opening and closing a bracket",
			file: "---\nname: r\ndescription: [WIP] Reviews: code\n---\np",
			want: `{"description":"[WIP] Reviews: code","prompt":"p"}`,
		},
		{
			// A flow list over lines, valid YAML, while another value
			// needs the second try.
			name: "flow list over lines",
			file: "---\nname: r\ndescription: Use it when: x\ntools: [Read,\n  Grep]\n---\np",
			want: `{"description":"Use it when: x","prompt":"p","tools":["Read","Grep"]}`,
		},
		{
			// Invalid YAML, read as the CLI reads it: tabs made spaces.
			name: "tab indentation",
			file: "---\n\tname: r\n\tdescription: d\n---\np",
			want: `{"description":"d","prompt":"p"}`,
		},
		{
			name: "every field",
			file: `---
name: all
description: d
model: sonnet
effort: Med
permissionMode: manual
maxTurns: "5"
autoCompactWindow: 200000
skills: a, b
initialPrompt: start
memory: project
background: "true"
omitClaudeMd: true
isolation: worktree
observer: watcher
observerMessage: note
observeSubagents: false
observeToolResults: true
color: cyan
mcpServers:
  - github
  - local: {command: srv, args: [-v]}
hooks:
  Stop:
    - hooks: [{type: command, command: "echo <done>"}]
---
p`,
			want: `{"description":"d","prompt":"p","model":"sonnet","effort":"medium","permissionMode":"default",` +
				`"mcpServers":["github",{"local":{"args":["-v"],"command":"srv"}}],` +
				`"hooks":{"Stop":[{"hooks":[{"command":"echo <done>","type":"command"}]}]},` +
				`"maxTurns":5,"autoCompactWindow":200000,"skills":["a","b"],"initialPrompt":"start","memory":"project",` +
				`"background":true,"omitClaudeMd":true,"isolation":"worktree","observer":"watcher","observerMessage":"note",` +
				`"observeSubagents":false}`,
		},
		{
			name: "integer effort",
			file: "---\nname: r\ndescription: d\neffort: 4000\n---\np",
			want: `{"description":"d","prompt":"p","effort":4000}`,
		},
		{
			name: "bad values are dropped",
			file: "---\nname: r\ndescription: d\neffort: huge\nmaxTurns: 0\nmemory: team\ncolor: 12\nautoCompactWindow: 10\nbackground: maybe\nmcpServers:\n  - [1]\n---\np",
			want: `{"description":"d","prompt":"p"}`,
			warns: []string{
				"f.md:4: field effort ignored",
				"f.md:5: field maxTurns ignored",
				`f.md:6: field memory ignored: "team" is not one of user, project, local`,
				"f.md:7: field color ignored: not a string",
				"f.md:8: field autoCompactWindow ignored",
				"f.md:9: field background ignored",
				"f.md:11: field mcpServers: an item ignored",
			},
		},
		{
			name: "unknown fields",
			file: "---\nname: r\ndescription: d\nfoo: 1\nmaxBudgetUsd: 2\nprompt: x\n---\np",
			want: `{"description":"d","prompt":"p"}`,
			warns: []string{
				`f.md:4: unknown fields "foo", "maxBudgetUsd", "prompt" kept aside`,
			},
		},
		{
			name: "experimental is known but not passed",
			file: "---\nname: r\ndescription: d\nexperimental:\n  cacheTtl: 1h\n---\np",
			want: `{"description":"d","prompt":"p"}`,
			warns: []string{
				"f.md:4: field experimental ignored: --agents does not take it",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, warns := ParseAgentFile("f.md", []byte(tc.file))
			if a == nil {
				t.Fatalf("skipped: %v", warningTexts(warns))
			}
			if tc.wantName != "" && a.Name != tc.wantName {
				t.Errorf("Name = %q, want %q", a.Name, tc.wantName)
			}
			if got := definitionJSON(t, a); got != tc.want {
				t.Errorf("definition:\n got %s\nwant %s", got, tc.want)
			}
			if len(warns) != len(tc.warns) {
				t.Fatalf("warnings %q, want %d like %q", warningTexts(warns), len(tc.warns), tc.warns)
			}
			for i, w := range warns {
				if !strings.Contains(w.String(), tc.warns[i]) {
					t.Errorf("warning %d = %q, want it to contain %q", i, w, tc.warns[i])
				}
			}
		})
	}
}

func TestParseAgentFileKeepsUnknownAndColor(t *testing.T) {
	a, _ := ParseAgentFile("f.md", []byte("---\nname: r\ndescription: d\ncolor: pink\nextra:\n  k: [1, two]\n---\np"))
	if a == nil {
		t.Fatal("skipped")
	}
	if a.Color != "pink" {
		t.Errorf("Color = %q", a.Color)
	}
	want := map[string]any{"extra": map[string]any{"k": []any{1, "two"}}}
	if !reflect.DeepEqual(a.Unknown, want) {
		t.Errorf("Unknown = %#v, want %#v", a.Unknown, want)
	}
	if a.Source != SourceUser || a.Path != "f.md" || a.Line != 2 {
		t.Errorf("place = %v %q %d", a.Source, a.Path, a.Line)
	}
}

// TestParseAgentFileSkipped: a file that cannot be used is skipped with
// exactly one warning, naming the file and the line.
func TestParseAgentFileSkipped(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		want string // the warning's beginning
		has  string // and a part of the rest
	}{
		{"no front matter", "# Notes\nname: x\n", "dir/f.md:1: skipped: no front matter", ""},
		{"empty file", "", "dir/f.md:1: skipped: no front matter", ""},
		{"unterminated", "---\nname: x\ndescription: y\nbody\n", "dir/f.md:1: skipped: the front matter is not terminated", ""},
		// yaml.v3 names the line where the flow list starts.
		{"unclosed flow list", "---\nname: x\ndescription: y\ntools:\n  - [Read, Grep\nmodel: z\n---\nbody", "dir/f.md:5: skipped: invalid YAML front matter", "did not find expected ',' or ']'"},
		{"unclosed quote", "---\nname: x\ndescription: 'abc\nmodel: y\n---\nbody", "dir/f.md:3: skipped: invalid YAML front matter", "found unexpected end of stream"},
		{"bad indentation", "---\nname: x\ndescription: y\n  model: z\n---\nbody", "dir/f.md:4: skipped: invalid YAML front matter", "mapping values are not allowed"},
		// The CLI's second try would read "[oops" as a name (served as the
		// tool _oops) and "[Read" as a tool: a flow list not closed is a
		// syntax error, named at its line.
		{"name opening a flow list", "---\nname: [oops\ndescription: y\n---\nbody", "dir/f.md:2: skipped: invalid YAML front matter", `"[oops" opens a flow list or mapping that is not closed on its line`},
		{"tools opening a flow list", "---\nname: x\ndescription: Use it when: y\ntools: [Read, Grep\n---\nbody", "dir/f.md:4: skipped: invalid YAML front matter", `"[Read, Grep" opens a flow list`},
		{"field opening a flow mapping", "---\nname: x\ndescription: y\nhooks: {Stop: []\n---\nbody", "dir/f.md:4: skipped: invalid YAML front matter", `"{Stop: []" opens a flow list or mapping`},
		{"bad list indentation", "---\nname: x\ntools:\n  - Read\n - Grep\n---\nbody", "dir/f.md:5: skipped: invalid YAML front matter", "did not find expected key"},
		{"not a mapping", "---\n- a\n- b\n---\nbody", "dir/f.md:2: skipped: the front matter is not a mapping", ""},
		{"empty front matter", "---\n---\nbody", "dir/f.md:1: skipped: missing required field \"name\"", ""},
		{"missing name", "---\ndescription: y\n---\nbody", "dir/f.md:1: skipped: missing required field \"name\"", ""},
		{"null name", "---\nname:\ndescription: y\n---\nbody", "dir/f.md:1: skipped: missing required field \"name\"", ""},
		{"name not a string", "---\ndescription: y\nname: 12\n---\nbody", "dir/f.md:3: skipped: field \"name\" must be a string", ""},
		{"missing description", "---\nname: x\n---\nbody", "dir/f.md:1: skipped: missing required field \"description\"", ""},
		{"empty description", "---\nname: x\ndescription: \"  \"\n---\nbody", "dir/f.md:3: skipped: field \"description\" is empty", ""},
		{"name starts with -", "---\nname: -x\ndescription: y\n---\nbody", "dir/f.md:2: skipped: invalid name \"-x\"", ""},
		{"name with a colon", "---\nname: \"plug:x\"\ndescription: y\n---\nbody", "dir/f.md:2: skipped: invalid name \"plug:x\"", "reserved"},
		{"duplicate field", "---\nname: x\ndescription: y\nname: z\n---\nbody", "dir/f.md:4: skipped: field \"name\" appears twice", ""},
		{"empty prompt", "---\nname: x\ndescription: y\n---\n\n  \n", "dir/f.md:5: skipped: the system prompt", ""},
		{"top-level guard hook", "---\nname: x\ndescription: y\nPreToolUse: []\n---\nbody", "dir/f.md:4: skipped: PreToolUse is declared at the top level", ""},
		{"too large", "---\nname: x\ndescription: y\n---\n" + strings.Repeat("a", MaxFileBytes), "dir/f.md: skipped: larger than", ""},
		{"not UTF-8", "---\nname: x\ndescription: \xff\n---\nbody", "dir/f.md: skipped: not UTF-8", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, warns := ParseAgentFile("dir/f.md", []byte(tc.file))
			if a != nil {
				t.Fatalf("parsed %+v, want it skipped", a)
			}
			if len(warns) != 1 {
				t.Fatalf("warnings %q, want exactly one", warningTexts(warns))
			}
			got := warns[0].String()
			if !strings.HasPrefix(got, tc.want) || !strings.Contains(got, tc.has) {
				t.Errorf("warning %q, want it to start with %q and contain %q", got, tc.want, tc.has)
			}
			if strings.HasPrefix(tc.name, "empty prompt") && warns[0].Agent != "x" {
				t.Errorf("warning names agent %q, want x", warns[0].Agent)
			}
		})
	}
}

func TestSplitToolList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"Read", []string{"Read"}},
		{"Read,Grep", []string{"Read", "Grep"}},
		{" Read ,  Grep  Glob ", []string{"Read", "Grep", "Glob"}},
		{"Bash(git log:*), Bash(npm run test, lint)", []string{"Bash(git log:*)", "Bash(npm run test, lint)"}},
		{"", nil},
		{",,", nil},
	} {
		if got := splitToolList(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitToolList(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseOperatorFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agents.json")
	doc := `{
	"reviewer": {
		"description": "Reviews code",
		"prompt": "You review code.",
		"tools": ["Read", "Grep"],
		"model": "opus",
		"effort": "high",
		"maxBudgetUsd": 1.5,
		"worktree": true,
		"profile": "gateway",
		"settingSources": [],
		"permissionMode": "plan",
		"mcpServers": {"docs": {"type": "http", "url": "https://example.com/mcp"}},
		"plugins": ["plugins/one", "/abs/two"],
		"appendSystemPrompt": "Be brief."
	},
	"writer": {
		"description": "Writes",
		"prompt": "You write.",
		"worktree": "docs-branch",
		"color": "red"
	}
}`
	agents, warns, err := ParseOperatorFile(path, []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings %q", warningTexts(warns))
	}
	if len(agents) != 2 {
		t.Fatalf("%d agents, want 2", len(agents))
	}
	r, w := agents[0], agents[1]
	if r.Name != "reviewer" || r.Line != 2 || r.Source != SourceFile || r.Path != path {
		t.Errorf("reviewer's place: %q %d %v %q", r.Name, r.Line, r.Source, r.Path)
	}
	if got, want := definitionJSON(t, r), `{"description":"Reviews code","prompt":"You review code.","tools":["Read","Grep"],"model":"opus"}`; got != want {
		t.Errorf("definition:\n got %s\nwant %s", got, want)
	}
	wantOp := OperatorOptions{
		Effort:             "high",
		MaxBudgetUSD:       1.5,
		Worktree:           Worktree{On: true},
		Profile:            "gateway",
		SettingSources:     []string{},
		PermissionMode:     "plan",
		MCPServers:         map[string]json.RawMessage{"docs": json.RawMessage(`{"type":"http","url":"https://example.com/mcp"}`)},
		Plugins:            []string{filepath.Join(dir, "plugins/one"), "/abs/two"},
		AppendSystemPrompt: "Be brief.",
	}
	if !reflect.DeepEqual(r.Operator, wantOp) {
		t.Errorf("Operator =\n %+v\nwant\n %+v", r.Operator, wantOp)
	}
	if w.Operator.Worktree != (Worktree{On: true, Name: "docs-branch"}) || w.Color != "red" || w.Line != 17 {
		t.Errorf("writer: worktree %+v, color %q, line %d", w.Operator.Worktree, w.Color, w.Line)
	}

	opts, err := r.SessionOptions()
	if err != nil {
		t.Fatal(err)
	}
	if opts.Agent != "reviewer" || opts.Effort != "high" || opts.MaxBudgetUSD != 1.5 || opts.PermissionMode != "plan" ||
		opts.SettingSources == nil || len(opts.SettingSources) != 0 || opts.AppendSystemPrompt != "Be brief." {
		t.Errorf("SessionOptions = %+v", opts)
	}
	if got, want := string(opts.Agents), `{"reviewer":{"description":"Reviews code","prompt":"You review code.","tools":["Read","Grep"],"model":"opus"}}`; got != want {
		t.Errorf("Agents = %s, want %s", got, want)
	}
}

func TestParseOperatorFileYAMLList(t *testing.T) {
	doc := `# the operator's agents
- name: planner
  description: Plans
  prompt: |
    You plan.
  tools: Read, Glob
  worktree: false
- name: planner2
  description: Plans too
  # no prompt
- description: no name
  prompt: p
- just a string
- name: bad-values
  description: d
  prompt: p
  effort: 7
  maxBudgetUsd: -1
  worktree: [x]
  settingSources: [user, cloud]
  mcpServers: [github]
  plugins: [""]
  tone: dry
- name: planner
  description: Plans, again
  prompt: You plan again.
`
	agents, warns, err := ParseOperatorFile("ops.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	wantWarns := []string{
		`ops.yaml:8: entry "planner2" skipped: missing required field "prompt"`,
		`ops.yaml:11: an entry skipped: missing required field "name"`,
		`ops.yaml:13: an entry skipped: not an object`,
		`ops.yaml:17: field effort ignored`,
		`ops.yaml:18: field maxBudgetUsd ignored`,
		`ops.yaml:19: field worktree ignored`,
		`ops.yaml:20: field settingSources ignored: "cloud"`,
		`ops.yaml:21: field mcpServers ignored: in the operator file it is the session's {name: config} object`,
		`ops.yaml:22: field plugins ignored`,
		`ops.yaml:23: unknown field "tone" kept aside`,
		`ops.yaml:2: agent "planner" is shadowed by the later entry at line 24`,
	}
	got := warningTexts(warns)
	if len(got) != len(wantWarns) {
		t.Fatalf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantWarns, "\n"))
	}
	for i := range got {
		if !strings.HasPrefix(got[i], wantWarns[i]) {
			t.Errorf("warning %d = %q, want it to start with %q", i, got[i], wantWarns[i])
		}
	}
	if len(agents) != 2 || agents[0].Name != "bad-values" || agents[1].Name != "planner" {
		t.Fatalf("agents %v, want bad-values, planner", agents)
	}
	if p := agents[1]; p.Description != "Plans, again" || p.Line != 24 || p.Operator.Worktree.On {
		t.Errorf("planner = %+v", p)
	}
	if b := agents[0]; !reflect.DeepEqual(b.Operator, OperatorOptions{}) || b.Unknown["tone"] != "dry" {
		t.Errorf("bad-values: Operator %+v, Unknown %v", b.Operator, b.Unknown)
	}
}

func TestParseOperatorFileKeyedName(t *testing.T) {
	agents, warns, err := ParseOperatorFile("ops.yaml", []byte("a:\n  name: b\n  description: d\n  prompt: p\n\"-bad\":\n  description: d\n  prompt: p\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`ops.yaml:2: field name ignored: the entry's key "a" is its name`,
		`ops.yaml:5: entry "-bad" skipped: invalid name "-bad"`,
	}
	if got := warningTexts(warns); len(got) != 2 || !strings.HasPrefix(got[0], want[0]) || !strings.HasPrefix(got[1], want[1]) {
		t.Errorf("warnings %q, want %q", got, want)
	}
	if len(agents) != 1 || agents[0].Name != "a" {
		t.Errorf("agents %v", agents)
	}
}

// TestParseOperatorFileUnusable: a file that cannot be used at all is an
// error, a Warning naming the line.
func TestParseOperatorFileUnusable(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{
		{"JSON syntax", "{\n  \"a\": {\"description\": \"d\" \"prompt\": \"p\"}\n}\n", "ops:2: skipped: invalid JSON or YAML: did not find expected ',' or '}'"},
		{"YAML syntax", "a:\n  description: d\n   prompt: p\n", "ops:3: skipped: invalid JSON or YAML: mapping values are not allowed"},
		{"a scalar", "\n\nhello\n", "ops:3: skipped: not an object of agents by name nor a list of agents"},
		{"too large", strings.Repeat(" ", MaxFileBytes+1), "ops: skipped: larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agents, warns, err := ParseOperatorFile("ops", []byte(tc.file))
			if err == nil {
				t.Fatalf("no error; agents %v, warnings %q", agents, warningTexts(warns))
			}
			var w Warning
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q, want it to start with %q", err, tc.want)
			}
			if w, _ = err.(Warning); w.Path != "ops" {
				t.Errorf("error %#v is not a Warning on ops", err)
			}
		})
	}
}

func TestParseOperatorFileEmpty(t *testing.T) {
	agents, warns, err := ParseOperatorFile("ops", []byte("# nothing yet\n"))
	if err != nil || len(agents) != 0 || len(warns) != 1 || !strings.Contains(warns[0].Text, "no agents") {
		t.Errorf("agents %v, warnings %q, error %v", agents, warningTexts(warns), err)
	}
}

func TestEffortJSON(t *testing.T) {
	for e, want := range map[Effort]string{"high": `"high"`, "32000": `32000`, "": `""`} {
		b, err := json.Marshal(e)
		if err != nil || string(b) != want {
			t.Errorf("Marshal(%q) = %s, %v; want %s", e, b, err, want)
		}
	}
}

// TestInvisibleCharacters: control characters other than a line break and
// a tab (C0, DEL, C1) and invisible formatting characters (a right-to-left
// override, isolates, a zero-width space, a tag character) are removed
// from a description, with a warning naming the line; a description of
// nothing else is skipped, and a name holding one is refused (it is the
// key the CLI gets).
func TestInvisibleCharacters(t *testing.T) {
	// YAML's and JSON's escapes: most of these may not be written raw.
	file := "---\nname: r\ndescription: \"Reviews\\u202E code\\e[2J.\\u009b\\u200b Use\\tit\\nnow\\U000E0041\\x7f\"\n---\np"
	a, warns := ParseAgentFile("f.md", []byte(file))
	if a == nil {
		t.Fatalf("skipped: %q", warningTexts(warns))
	}
	if want := "Reviews code[2J. Use\tit\nnow"; a.Description != want {
		t.Errorf("agent file's description %q, want %q", a.Description, want)
	}
	if got, want := warningTexts(warns), []string{"f.md:3: field description: 6 control or invisible formatting characters removed"}; !slices.Equal(got, want) {
		t.Errorf("warnings %q, want %q", got, want)
	}

	agents, warns, err := ParseOperatorFile("ops.json", []byte(`{
  "o": {"description": "Plans\u001b[0m \u2066hidden\u2069 \u0085x", "prompt": "p"},
  "a\u200bb": {"description": "d", "prompt": "p"},
  "e": {"description": "\u200b\u202e ", "prompt": "p"}
}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) != 1 || agents[0].Description != "Plans[0m hidden x" {
		t.Errorf("operator file's agents %+v, want o with the description %q", agents, "Plans[0m hidden x")
	}
	wantWarns := []string{
		`ops.json:2: field description: 4 control or invisible formatting characters removed`,
		`ops.json:3: entry "a\u200bb" skipped: invalid name "a\u200bb": it holds a control or invisible formatting character`,
		`ops.json:4: entry "e" skipped: field "description" has no visible text`,
	}
	if got := warningTexts(warns); !slices.Equal(got, wantWarns) {
		t.Errorf("operator file's warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantWarns, "\n"))
	}

	for _, tc := range []struct{ file, want string }{
		{"---\nname: \"r\\u202Eevil\"\ndescription: d\n---\np", `f.md:2: skipped: invalid name "r\u202eevil": it holds a control or invisible formatting character`},
		{"---\nname: \"r\\u0085\"\ndescription: d\n---\np", `f.md:2: skipped: invalid name "r\u0085": it holds a control or invisible formatting character`},
		{"---\nname: r\ndescription: \"\\u200B\\u00AD\"\n---\np", `f.md:3: skipped: field "description" has no visible text`},
	} {
		if a, warns := ParseAgentFile("f.md", []byte(tc.file)); a != nil || !slices.Equal(warningTexts(warns), []string{tc.want}) {
			t.Errorf("%q: agent %+v, warnings %q; want it skipped with %q", tc.file, a, warningTexts(warns), tc.want)
		}
	}
}
