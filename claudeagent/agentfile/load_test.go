package agentfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeFile writes a file, making its directory.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// agentMD is an agent file.
func agentMD(name, description string) string {
	return fmt.Sprintf("---\nname: %s\ndescription: %s\n---\nYou are %s.\n", name, description, name)
}

// summary lists a set's agents as "tool=description (source)".
func summary(s *Set) []string {
	var out []string
	for _, a := range s.Agents {
		out = append(out, fmt.Sprintf("%s=%s (%s)", a.ToolName, a.Description, a.Source))
	}
	return out
}

func TestParseSources(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Sources
		err  bool
	}{
		{"user,project,file", Sources(SourceUser | SourceProject | SourceFile), false},
		{" dirs , user ", Sources(SourceUser | SourceDirs), false},
		{"all", AllSources, false},
		{"", 0, false},
		{"none", 0, false},
		{"user,user", Sources(SourceUser), false},
		{"user,plugins", 0, true},
		{"User", 0, true},
	} {
		got, err := ParseSources(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ParseSources(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
		if err == nil {
			back, _ := ParseSources(got.String())
			if back != got {
				t.Errorf("ParseSources(%q).String() = %q does not read back", tc.in, got)
			}
		}
	}
	if got := SourceProject.String(); got != "project" {
		t.Errorf("SourceProject = %q", got)
	}
}

func TestDefaultUserDir(t *testing.T) {
	t.Setenv("CLAUDE_CONFIG_DIR", "/cfg")
	if got, err := DefaultUserDir(); err != nil || got != filepath.Join("/cfg", "agents") {
		t.Errorf("with CLAUDE_CONFIG_DIR: %q, %v", got, err)
	}
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)
	if got, err := DefaultUserDir(); err != nil || got != filepath.Join(home, ".claude", "agents") {
		t.Errorf("without CLAUDE_CONFIG_DIR: %q, %v", got, err)
	}
}

// sources is a tree with every source, defining some names several times.
type sources struct {
	user, project, dir1, dir2, file string
}

func makeSources(t *testing.T) sources {
	root := t.TempDir()
	s := sources{
		user:    filepath.Join(root, "config", "agents"),
		project: filepath.Join(root, "project"),
		dir1:    filepath.Join(root, "dir1"),
		dir2:    filepath.Join(root, "dir2"),
		file:    filepath.Join(root, "agents.yaml"),
	}
	writeFile(t, filepath.Join(s.user, "reviewer.md"), agentMD("reviewer", "user"))
	writeFile(t, filepath.Join(s.user, "helper.md"), agentMD("helper", "user"))
	writeFile(t, filepath.Join(s.project, ".claude", "agents", "reviewer.md"), agentMD("reviewer", "project"))
	writeFile(t, filepath.Join(s.project, ".claude", "agents", "planner.md"), agentMD("planner", "project"))
	writeFile(t, filepath.Join(s.dir1, "planner.md"), agentMD("planner", "dir1"))
	writeFile(t, filepath.Join(s.dir2, "planner.md"), agentMD("planner", "dir2"))
	writeFile(t, filepath.Join(s.dir2, "writer.md"), agentMD("writer", "dir2"))
	writeFile(t, s.file, "writer:\n  description: file\n  prompt: You write.\n")
	return s
}

func (s sources) config(set Sources) Config {
	return Config{Sources: set, UserDir: s.user, Project: s.project, Dirs: []string{s.dir1, s.dir2}, File: s.file}
}

func TestLoadPrecedence(t *testing.T) {
	s := makeSources(t)
	for _, tc := range []struct {
		sources string
		want    []string
		shadows []string // the beginnings of the warnings
	}{
		{
			sources: "all",
			want:    []string{"helper=user (user)", "planner=dir2 (dirs)", "reviewer=project (project)", "writer=file (file)"},
			shadows: []string{
				filepath.Join(s.user, "reviewer.md") + `:2: agent "reviewer" (user) is shadowed by ` + filepath.Join(s.project, ".claude", "agents", "reviewer.md") + ":2 (project)",
				filepath.Join(s.project, ".claude", "agents", "planner.md") + `:2: agent "planner" (project) is shadowed by ` + filepath.Join(s.dir1, "planner.md") + ":2 (dirs)",
				filepath.Join(s.dir1, "planner.md") + `:2: agent "planner" (dirs) is shadowed by ` + filepath.Join(s.dir2, "planner.md") + ":2 (dirs)",
				filepath.Join(s.dir2, "writer.md") + `:2: agent "writer" (dirs) is shadowed by ` + s.file + ":1 (file)",
			},
		},
		{
			sources: "user,project",
			want:    []string{"helper=user (user)", "planner=project (project)", "reviewer=project (project)"},
			shadows: []string{filepath.Join(s.user, "reviewer.md") + `:2: agent "reviewer" (user) is shadowed by`},
		},
		{
			sources: "user,file",
			want:    []string{"helper=user (user)", "reviewer=user (user)", "writer=file (file)"},
		},
		{
			sources: "dirs",
			want:    []string{"planner=dir2 (dirs)", "writer=dir2 (dirs)"},
			shadows: []string{filepath.Join(s.dir1, "planner.md") + `:2: agent "planner" (dirs) is shadowed by`},
		},
		{sources: "none"},
	} {
		t.Run(tc.sources, func(t *testing.T) {
			set, err := ParseSources(tc.sources)
			if err != nil {
				t.Fatal(err)
			}
			got := Load(s.config(set))
			if !slices.Equal(summary(got), tc.want) {
				t.Errorf("agents %q, want %q", summary(got), tc.want)
			}
			ws := warningTexts(got.Warnings)
			if len(ws) != len(tc.shadows) {
				t.Fatalf("warnings:\n%s\nwant %d", strings.Join(ws, "\n"), len(tc.shadows))
			}
			for i, w := range ws {
				if !strings.HasPrefix(w, tc.shadows[i]) {
					t.Errorf("warning %d:\n %s\nwant it to start with\n %s", i, w, tc.shadows[i])
				}
			}
		})
	}
}

func TestLoadDirectoryTree(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.md"), agentMD("x", "top"))
	writeFile(t, filepath.Join(dir, "sub", "b.md"), agentMD("x", "sub"))
	writeFile(t, filepath.Join(dir, "sub", "deeper", "c.md"), agentMD("deep", "deeper"))
	writeFile(t, filepath.Join(dir, ".hidden", "h.md"), agentMD("hidden", "hidden"))
	writeFile(t, filepath.Join(dir, "notes.txt"), agentMD("txt", "not read"))
	writeFile(t, filepath.Join(dir, "README.MD"), agentMD("upper", "not read: the CLI reads *.md"))
	writeFile(t, filepath.Join(dir, "broken.md"), "---\nname: broken\n")
	if runtime.GOOS != "windows" {
		// A loop, and a second name for a.md: each read once.
		if err := os.Symlink("..", filepath.Join(dir, "sub", "loop")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("a.md", filepath.Join(dir, "z-link.md")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("missing.md", filepath.Join(dir, "dangling.md")); err != nil {
			t.Fatal(err)
		}
	}
	got := Load(Config{Sources: Sources(SourceDirs), Dirs: []string{dir}})
	want := []string{"deep=deeper (dirs)", "hidden=hidden (dirs)", "x=sub (dirs)"}
	if !slices.Equal(summary(got), want) {
		t.Errorf("agents %q, want %q", summary(got), want)
	}
	wantWarns := []string{
		filepath.Join(dir, "broken.md") + ":1: skipped: the front matter is not terminated",
		filepath.Join(dir, "a.md") + `:2: agent "x" (dirs) is shadowed by ` + filepath.Join(dir, "sub", "b.md") + ":2 (dirs)",
	}
	if runtime.GOOS != "windows" {
		wantWarns = slices.Insert(wantWarns, 0, filepath.Join(dir, "dangling.md")+": not read: a symbolic link that cannot be followed")
	}
	ws := warningTexts(got.Warnings)
	if len(ws) != len(wantWarns) {
		t.Fatalf("warnings:\n%s\nwant:\n%s", strings.Join(ws, "\n"), strings.Join(wantWarns, "\n"))
	}
	for i := range ws {
		if !strings.HasPrefix(ws[i], wantWarns[i]) {
			t.Errorf("warning %d:\n %s\nwant it to start with\n %s", i, ws[i], wantWarns[i])
		}
	}
}

// TestLoadSameFileTwice: a project inside the config directory's parent
// reaches the user's files twice; they count once, as the user's.
func TestLoadSameFileTwice(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".claude", "agents", "r.md"), agentMD("r", "d"))
	got := Load(Config{Sources: AllSources, UserDir: filepath.Join(home, ".claude", "agents"), Project: home})
	if want := []string{"r=d (user)"}; !slices.Equal(summary(got), want) || len(got.Warnings) != 0 {
		t.Errorf("agents %q, warnings %q; want %q and none", summary(got), warningTexts(got.Warnings), want)
	}
}

func TestLoadMissingSources(t *testing.T) {
	root := t.TempDir()
	got := Load(Config{
		Sources: AllSources,
		UserDir: filepath.Join(root, "no-user"),
		Project: filepath.Join(root, "no-project"),
		Dirs:    []string{filepath.Join(root, "no-dir")},
		File:    filepath.Join(root, "no-file.json"),
	})
	// The user's and the project's directories are optional; what the
	// operator named is not.
	want := []string{
		filepath.Join(root, "no-dir") + ": agents directory not read: ",
		filepath.Join(root, "no-file.json") + ": not read: ",
	}
	ws := warningTexts(got.Warnings)
	if len(got.Agents) != 0 || len(ws) != len(want) {
		t.Fatalf("agents %q, warnings %q", summary(got), ws)
	}
	for i := range ws {
		if !strings.HasPrefix(ws[i], want[i]) {
			t.Errorf("warning %q, want it to start with %q", ws[i], want[i])
		}
	}
}

func TestLoadOperatorFileErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "agents.json")
	writeFile(t, file, "{\n  \"a\": {\"description\": \"d\", \"prompt\": \"p\"},\n  \"b\": [1,\n}\n")
	got := Load(Config{Sources: Sources(SourceFile), File: file})
	if ws := warningTexts(got.Warnings); len(got.Agents) != 0 || len(ws) != 1 || !strings.HasPrefix(ws[0], file+":4: skipped: invalid JSON or YAML: did not find expected node content") {
		t.Errorf("agents %q, warnings %q", summary(got), ws)
	}
	writeFile(t, file, "[{\"name\": \"a\", \"description\": \"d\", \"prompt\": \"p\"}, {\"name\": \"b\"}]")
	got = Load(Config{Sources: Sources(SourceFile), File: file})
	if ws := warningTexts(got.Warnings); !slices.Equal(summary(got), []string{"a=d (file)"}) || len(ws) != 1 || !strings.HasPrefix(ws[0], file+`:1: entry "b" skipped: missing required field "description"`) {
		t.Errorf("agents %q, warnings %q", summary(got), ws)
	}
}

func TestLoadCap(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"u1", "u2", "u3"} {
		writeFile(t, filepath.Join(dir, "user", n+".md"), agentMD(n, "user"))
	}
	writeFile(t, filepath.Join(dir, "agents.yaml"), "- {name: z1, description: file, prompt: p}\n- {name: z2, description: file, prompt: p}\n")
	cfg := Config{Sources: AllSources, UserDir: filepath.Join(dir, "user"), File: filepath.Join(dir, "agents.yaml"), Max: 3}
	got := Load(cfg)
	// The operator file's agents come first, then by name.
	if want := []string{"u1=user (user)", "z1=file (file)", "z2=file (file)"}; !slices.Equal(summary(got), want) {
		t.Errorf("agents %q, want %q", summary(got), want)
	}
	want := []string{`5 agents found, at most 3 exposed; not exposed: "u2" (user), "u3" (user)`}
	if ws := warningTexts(got.Warnings); !slices.Equal(ws, want) {
		t.Errorf("warnings %q, want %q", ws, want)
	}
	cfg.Max = 0
	if got := Load(cfg); len(got.Agents) != 5 || len(got.Warnings) != 0 {
		t.Errorf("no cap: agents %q, warnings %q", summary(got), warningTexts(got.Warnings))
	}
}

func TestLoadToolNames(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "q.md"), agentMD("claude_chat_query", "collides"))
	writeFile(t, filepath.Join(dir, "r.md"), agentMD("code reviewer", "spaces"))
	writeFile(t, filepath.Join(dir, "a.md"), agentMD("alpha", "plain"))
	got := Load(Config{Sources: Sources(SourceUser), UserDir: dir, Reserved: []string{"claude_chat_query"}})
	want := []string{"alpha=plain (user)", "claude_chat_query_2=collides (user)", "code_reviewer=spaces (user)"}
	if !slices.Equal(summary(got), want) {
		t.Errorf("agents %q, want %q", summary(got), want)
	}
	if len(got.Warnings) != 2 {
		t.Errorf("warnings %q, want the collision and the normalised name", warningTexts(got.Warnings))
	}
	if a := got.Lookup("code_reviewer"); a == nil || a.Name != "code reviewer" {
		t.Errorf("Lookup(code_reviewer) = %+v", a)
	}
	if a := got.Lookup("claude_chat_query"); a != nil {
		t.Errorf("Lookup(claude_chat_query) = %+v, want nil", a)
	}
}

// TestScannerCache: a file is read again only when its size or time
// changed, or when it changed too recently for them to tell.
func TestScannerCache(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.md")
	writeFile(t, path, agentMD("a", "one"))
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	sc := newScanner()
	reads := 0
	read := sc.read
	sc.read = func(r io.Reader) ([]byte, error) {
		reads++
		return read(r)
	}
	cfg := Config{Sources: Sources(SourceDirs), Dirs: []string{dir}}
	scan := func(wantReads int, wantDesc string) *Set {
		t.Helper()
		s := sc.scan(cfg)
		if reads != wantReads {
			t.Errorf("%d reads, want %d", reads, wantReads)
		}
		if len(s.Agents) != 1 || s.Agents[0].Description != wantDesc {
			t.Errorf("agents %q, want a=%s", summary(s), wantDesc)
		}
		return s
	}
	first := scan(1, "one")
	if again := scan(1, "one"); !again.Equal(first) { // old and unchanged: not read
		t.Error("the same files gave another set")
	}
	writeFile(t, path, agentMD("a", "two")) // same size, modified now
	scan(2, "two")
	scan(3, "two") // modified within the racy window: read again
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	scan(4, "two") // its time changed
	scan(4, "two")
	// Another scanner, Load, reads everything.
	if s := Load(cfg); !reflect.DeepEqual(summary(s), []string{"a=two (dirs)"}) {
		t.Errorf("Load: %q", summary(s))
	}
}
