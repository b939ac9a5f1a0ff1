package sessions

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/images"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
)

// TestDelegationValidation: each delegation option is checked at create,
// and the error names the field and says what is accepted.
func TestDelegationValidation(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{MaxSessionBudgetUSD: 1})
	dir := t.TempDir()
	file := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(file, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, tc := range []struct {
		name string
		so   claudeagent.SessionOptions
		want string // "" = valid
	}{
		{"effort", claudeagent.SessionOptions{Effort: "high"}, ""},
		{"bad_effort", claudeagent.SessionOptions{Effort: "huge"}, "invalid effort \"huge\": use one of low, medium, high, xhigh, max"},
		{"schema", claudeagent.SessionOptions{JSONSchema: raw(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)}, ""},
		{"schema_not_object", claudeagent.SessionOptions{JSONSchema: raw(`{"type":"string"}`)}, `invalid jsonSchema: its type must be "object"`},
		{"schema_not_json", claudeagent.SessionOptions{JSONSchema: raw(`[1,2]`)}, "invalid jsonSchema"},
		{"schema_bad", claudeagent.SessionOptions{JSONSchema: raw(`{"type":"object","properties":{"n":{"type":"objekt"}}}`)}, "invalid jsonSchema"},
		{"budget", claudeagent.SessionOptions{MaxBudgetUSD: 0.5}, ""},
		{"negative_budget", claudeagent.SessionOptions{MaxBudgetUSD: -1}, "invalid maxBudgetUsd"},
		{"budget_over_ceiling", claudeagent.SessionOptions{MaxBudgetUSD: 2}, "--max-session-budget-usd"},
		{"agents", claudeagent.SessionOptions{Agents: raw(`{"reviewer":{"description":"Reviews code","prompt":"You review code.","tools":["Read"],"model":"haiku"}}`)}, ""},
		{"agents_no_prompt", claudeagent.SessionOptions{Agents: raw(`{"reviewer":{"description":"d"}}`)}, `agents["reviewer"]: "prompt" must be a non-empty string`},
		{"agents_bad_name", claudeagent.SessionOptions{Agents: raw(`{"a b":{"description":"d","prompt":"p"}}`)}, `invalid agents name "a b"`},
		{"agents_not_object", claudeagent.SessionOptions{Agents: raw(`["x"]`)}, "invalid agents"},
		{"agents_bad_tools", claudeagent.SessionOptions{Agents: raw(`{"r":{"description":"d","prompt":"p","tools":"Read"}}`)}, `"tools" must be a list`},
		{"settings_object", claudeagent.SessionOptions{Settings: raw(`{"permissions":{"deny":["Bash"]}}`)}, ""},
		{"settings_file", claudeagent.SessionOptions{SettingsFile: file}, ""},
		{"settings_file_in_settings", claudeagent.SessionOptions{Settings: raw(`"` + file + `"`)}, ""},
		{"settings_missing_file", claudeagent.SessionOptions{SettingsFile: "/no/such/settings.json"}, `invalid settingsFile "/no/such/settings.json": no such file`},
		{"settings_missing_file_in_settings", claudeagent.SessionOptions{Settings: raw(`"/no/such/settings.json"`)}, `invalid settingsFile "/no/such/settings.json": no such file`},
		{"settings_relative", claudeagent.SessionOptions{SettingsFile: "settings.json"}, "not an absolute path"},
		{"settings_directory", claudeagent.SessionOptions{SettingsFile: dir}, "no such file"},
		{"settings_control", claudeagent.SessionOptions{SettingsFile: file + "\n"}, "control character"},
		{"settings_number", claudeagent.SessionOptions{Settings: raw(`5`)}, "invalid settings: pass a settings object"},
		{"settings_both", claudeagent.SessionOptions{Settings: raw(`{}`), SettingsFile: file}, "settings and settingsFile both given"},
		{"setting_sources", claudeagent.SessionOptions{SettingSources: []string{"user", "project"}}, ""},
		{"no_setting_sources", claudeagent.SessionOptions{SettingSources: []string{}}, ""},
		{"bad_setting_source", claudeagent.SessionOptions{SettingSources: []string{"global"}}, `invalid settingSources entry "global"`},
		{"fallback", claudeagent.SessionOptions{FallbackModel: "haiku"}, ""},
		{"agent", claudeagent.SessionOptions{Agent: "reviewer", Agents: raw(`{"reviewer":{"description":"d","prompt":"p"}}`)}, ""},
		{"agent_not_own", claudeagent.SessionOptions{Agent: "reviewer"}, `agent "reviewer" is not one of the session's own agents`},
		{"settings_agent_not_own", claudeagent.SessionOptions{Settings: raw(`{"agent":"reviewer"}`)}, `settings.agent "reviewer" is not one of the session's own agents`},
		{"settings_agent_own", claudeagent.SessionOptions{Settings: raw(`{"agent":"r"}`), Agents: raw(`{"r":{"description":"d","prompt":"p"}}`)}, ""},
		{"bad_agent", claudeagent.SessionOptions{Agent: "-rm -rf"}, "invalid agent"},
		{"bad_fallback", claudeagent.SessionOptions{FallbackModel: "a b"}, "invalid fallbackModel"},
		{"name", claudeagent.SessionOptions{Name: "reviewer #1"}, ""},
		{"name_control", claudeagent.SessionOptions{Name: "a\nb"}, "control character"},
		{"name_long", claudeagent.SessionOptions{Name: strings.Repeat("n", 101)}, "at most 100"},
	} {
		opts := CreateOptions{Cwd: dir, SessionOptions: tc.so}
		err := m.Validate(&opts)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Validate = %v, want %q", tc.name, err, tc.want)
		}
	}
	// A path in settings (the option's earlier form) becomes settingsFile.
	opts := CreateOptions{Cwd: dir, SessionOptions: claudeagent.SessionOptions{Settings: raw(`"` + file + `"`)}, Operator: []string{"settings"}}
	if err := m.Validate(&opts); err != nil || opts.Settings != nil || opts.SettingsFile != file || !slices.Contains(opts.Operator, "settingsFile") {
		t.Errorf("a path in settings: Validate = %v, settings %s, settingsFile %q, operator %v", err, opts.Settings, opts.SettingsFile, opts.Operator)
	}
}

// TestWorktreeOptionJSON: worktree is a name or "auto" ("" is none); true
// and false, which the store holds for sessions made before the string
// form, still read; and what is written reads back the same.
func TestWorktreeOptionJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want worktree.Option
		out  string
	}{
		{`"feature"`, worktree.Option{On: true, Name: "feature"}, `"feature"`},
		{`"auto"`, worktree.Option{On: true}, `true`},
		{`""`, worktree.Option{}, `false`},
		{`true`, worktree.Option{On: true}, `true`},
		{`false`, worktree.Option{}, `false`},
	} {
		var w worktree.Option
		if err := json.Unmarshal([]byte(tc.in), &w); err != nil || w != tc.want {
			t.Errorf("%s reads as %+v (%v), want %+v", tc.in, w, err, tc.want)
		}
		out, _ := json.Marshal(w)
		var back worktree.Option
		if string(out) != tc.out || json.Unmarshal(out, &back) != nil || back != w {
			t.Errorf("%+v writes %s, reading back %+v; want %s", w, out, back, tc.out)
		}
	}
	var w worktree.Option
	if err := json.Unmarshal([]byte(`5`), &w); err == nil || !strings.Contains(err.Error(), `a name, or "auto"`) {
		t.Errorf("a number: %v", err)
	}
}

// TestBudgets: a session's budget goes to the CLI as what is left of it, a
// session that spent it is refused; so is every turn once all sessions
// spent the server's total budget.
func TestBudgets(t *testing.T) {
	t.Parallel()
	t.Run("session", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{})
		s := create(t, m, CreateOptions{SessionOptions: claudeagent.SessionOptions{MaxBudgetUSD: 0.0004}})
		var pr probe
		query(t, s, "hi", QueryOptions{OnEvent: pr.onEvent(s)}) // 0.000275
		pr.checkArg(t, "--max-budget-usd=0.0004", true)
		query(t, s, "hi", QueryOptions{}) // 0.00055: over, after the fact
		_, err := s.Query(ctxFor(t), "hi", QueryOptions{})
		if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "maxBudgetUsd") {
			t.Fatalf("a query past the budget: %v", err)
		}
		// A new process gets what is left (none here, so the turn is refused
		// before any process starts).
		if !s.makeDormant("test") {
			t.Fatal("not dormant")
		}
		if _, err := s.Query(ctxFor(t), "hi", QueryOptions{}); !errors.Is(err, ErrBudget) {
			t.Errorf("after a restart of its process: %v", err)
		}
	})
	t.Run("remaining", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{MaxSessionBudgetUSD: 0.01})
		s := create(t, m, CreateOptions{}) // gets the ceiling as its budget
		query(t, s, "hi", QueryOptions{})
		if !s.makeDormant("test") {
			t.Fatal("not dormant")
		}
		var pr probe
		query(t, s, "hi", QueryOptions{OnEvent: pr.onEvent(s)})
		pr.checkArg(t, "--max-budget-usd=0.009725", true) // 0.01 − 0.000275
	})
	t.Run("total", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "sessions.db")
		m := newManager(t, Config{MaxTotalBudgetUSD: 0.0005, Store: storeAt(t, path)})
		a := create(t, m, CreateOptions{})
		b := create(t, m, CreateOptions{})
		query(t, a, "hi", QueryOptions{})
		query(t, b, "hi", QueryOptions{}) // 0.00055 in all
		for _, s := range []*Session{a, b} {
			if _, err := s.Query(ctxFor(t), "hi", QueryOptions{}); !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "--max-total-budget-usd") {
				t.Errorf("a turn past the total budget: %v", err)
			}
		}
		// Closing sessions does not give the money back, nor does a restart.
		m.Close(a.ID)
		m.Shutdown()
		m2 := newManager(t, Config{MaxTotalBudgetUSD: 0.0005, Store: storeAt(t, path)})
		if got := m2.Spent(); got < 0.00054 {
			t.Errorf("spent after a restart = %v", got)
		}
		if s, err := m2.Get(b.ID); err != nil {
			t.Fatal(err)
		} else if _, err := s.Query(ctxFor(t), "hi", QueryOptions{}); !errors.Is(err, ErrBudget) {
			t.Errorf("after a restart: %v", err)
		}
	})
}

// readInputLog returns what the fake CLI read from stdin.
func readInputLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the fake's input log: %v", err)
	}
	return string(b)
}

// TestEffortPerQuery: a query's own effort is switched in before its prompt
// (no restart) and the session's comes back after it.
func TestEffortPerQuery(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "in.log")
	m := newManager(t, Config{}, fakecli.EnvInputLog, log)
	s := create(t, m, CreateOptions{SessionOptions: claudeagent.SessionOptions{Effort: "medium"}})
	pid := s.Info().PID
	query(t, s, "hi", QueryOptions{}) // the session's effort: nothing to switch
	if in := readInputLog(t, log); strings.Contains(in, `"apply_flag_settings"`) {
		t.Errorf("a query without an effort of its own switched the effort:\n%s", in)
	}
	query(t, s, "hi", QueryOptions{Effort: "max"})
	query(t, s, "hi", QueryOptions{Effort: "medium"}) // the session's: nothing to switch
	in := readInputLog(t, log)
	if n := strings.Count(in, `"apply_flag_settings"`); n != 2 {
		t.Errorf("%d effort switches, want 2 (to max and back):\n%s", n, in)
	}
	iMax, iBack := strings.Index(in, `"effortLevel":"max"`), strings.Index(in, `"effortLevel":"medium"`)
	iUser := iMax + strings.Index(in[max(iMax, 0):], `"type":"user"`)
	if iMax < 0 || iUser < iMax || iBack < iUser {
		t.Errorf("the switch must come before the prompt and the way back after it:\n%s", in)
	}
	if s.Info().PID != pid {
		t.Errorf("the effort switch restarted the process")
	}
}

// TestStructuredOutput: with jsonSchema a result carries the CLI's
// structured output; a turn that ends without it says so plainly.
func TestStructuredOutput(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`)
	m := newManager(t, Config{}, fakecli.EnvStructured, `{"answer":"42"}`)
	s := create(t, m, CreateOptions{SessionOptions: claudeagent.SessionOptions{JSONSchema: schema}})
	r := query(t, s, "hi", QueryOptions{})
	if string(r.StructuredOutput) != `{"answer":"42"}` || r.IsError {
		t.Errorf("result = %+v", r)
	}
	m2 := newManager(t, Config{}) // the fake gives none
	s2 := create(t, m2, CreateOptions{SessionOptions: claudeagent.SessionOptions{JSONSchema: schema}})
	r = query(t, s2, "hi", QueryOptions{})
	if !r.IsError || !strings.Contains(r.ErrorText, "not structured output") {
		t.Errorf("a turn without structured output: %+v", r)
	}
}

// pngBytes is a 1×1 PNG.
var pngBytes, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// TestImages: images go with the prompt as image blocks; bad ones are
// refused with a reason, and a path outside the allowed roots too.
func TestImages(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	log := filepath.Join(t.TempDir(), "in.log")
	m := newManager(t, Config{AllowedRoots: []string{root}}, fakecli.EnvInputLog, log)
	if err := os.WriteFile(filepath.Join(root, "a.png"), pngBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "b.png")
	if err := os.WriteFile(outside, pngBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "not.png"), []byte("just text"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := create(t, m, CreateOptions{Cwd: root})
	imgs, err := m.LoadImages(root, []images.Input{{Path: "a.png"}, {Data: base64.StdEncoding.EncodeToString(pngBytes), MediaType: "image/png"}})
	if err != nil {
		t.Fatal(err)
	}
	query(t, s, "describe these", QueryOptions{Images: imgs})
	in := readInputLog(t, log)
	if n := strings.Count(in, `"type":"image"`); n != 2 || !strings.Contains(in, `"media_type":"image/png"`) || !strings.Contains(in, `"text":"describe these"`) {
		t.Errorf("the prompt with images: %s", in)
	}
	for _, tc := range []struct {
		in   images.Input
		want string
	}{
		{images.Input{Path: outside}, "--allowed-roots"},
		{images.Input{Path: "not.png"}, "not an image"},
		{images.Input{Path: "missing.png"}, "not a readable file"},
		{images.Input{Data: "%%%"}, "not base64"},
		{images.Input{Data: base64.StdEncoding.EncodeToString(pngBytes), MediaType: "image/gif"}, "does not match"},
		{images.Input{Data: base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("x"), images.MaxBytes+1))}, "more than"},
		{images.Input{}, "give path, or data"},
		{images.Input{Path: "a.png", Data: "x"}, "not both"},
	} {
		if _, err := m.LoadImages(root, []images.Input{tc.in}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadImages(%+v) = %v, want %q", tc.in, err, tc.want)
		}
	}
	if _, err := m.LoadImages(root, make([]images.Input, images.MaxCount+1)); err == nil || !strings.Contains(err.Error(), "too many images") {
		t.Errorf("too many images: %v", err)
	}
}

// TestReplayAfterLostTranscript: a session whose transcript was never
// written (the CLI killed right after a turn) starts afresh on its next
// query, seeded with its recorded history, and says so.
func TestReplayAfterLostTranscript(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "in.log")
	m := newManager(t, Config{}, fakecli.EnvNoTranscript, "1", fakecli.EnvInputLog, log)
	s := create(t, m, CreateOptions{})
	query(t, s, "remember the word PELICAN", QueryOptions{})
	lost := s.Info().ClaudeSessionID
	if !s.makeDormant("test") {
		t.Fatal("not dormant")
	}
	r := query(t, s, "which word?", QueryOptions{})
	if r.Recovered != "replayed" || r.IsError || r.ClaudeSessionID == lost || r.ClaudeSessionID == "" {
		t.Fatalf("the query after a lost transcript: %+v (lost id %s)", r, lost)
	}
	in := readInputLog(t, log)
	last := in[strings.LastIndex(strings.TrimSpace(in), "\n")+1:]
	if !strings.Contains(last, "remember the word PELICAN") || !strings.Contains(last, "which word?") || !strings.Contains(last, "restored here from notes") {
		t.Errorf("the replayed prompt: %s", last)
	}
	if r := query(t, s, "and now?", QueryOptions{}); r.Recovered != "" || r.IsError {
		t.Errorf("the query after the replay: %+v", r)
	}
	if got := s.Info(); got.State != state.Idle || got.ClaudeSessionID != r.ClaudeSessionID {
		t.Errorf("after the replay: %+v", got)
	}
}

// gitRepo makes a repository with one commit.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed: %v", err)
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "t"},
		{"commit", "-q", "--allow-empty", "-m", "first"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestWorktrees: a session with worktree works in a worktree of its own on
// a new branch; close removes it when nothing changed and keeps it
// otherwise; a cwd outside a repository is refused.
func TestWorktrees(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t)
	m := newManager(t, Config{})
	s := create(t, m, CreateOptions{Cwd: filepath.Join(repo, "sub"), Worktree: worktree.Option{On: true, Name: "feature"}})
	w := s.Info().Worktree
	wantPath := filepath.Join(repo, ".claude", "worktrees", "feature")
	if w == nil || w.Path != wantPath || w.Branch != "worktree-feature" || s.Info().Cwd != filepath.Join(wantPath, "sub") {
		t.Fatalf("worktree = %+v, cwd %s", w, s.Info().Cwd)
	}
	var pr probe
	query(t, s, "hi", QueryOptions{OnEvent: pr.onEvent(s)})
	if pr.ok {
		if cwd, err := os.Readlink("/proc/" + itoa(pr.pid) + "/cwd"); err == nil && cwd != filepath.Join(wantPath, "sub") {
			t.Errorf("the CLI runs in %s", cwd)
		}
	}
	if status, _ := exec.Command("git", "-C", repo, "status", "--porcelain").Output(); len(status) != 0 {
		t.Errorf("the worktree shows in the repository's status: %s", status)
	}
	// A second session on the same repository gets its own.
	s2 := create(t, m, CreateOptions{Cwd: repo, Worktree: worktree.Option{On: true}})
	if w2 := s2.Info().Worktree; w2 == nil || w2.Path == wantPath || !strings.HasPrefix(w2.Branch, "worktree-session-") {
		t.Errorf("second worktree = %+v", w2)
	}
	if _, err := m.Create(ctxFor(t), CreateOptions{Cwd: repo, Worktree: worktree.Option{On: true, Name: "feature"}}); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("a worktree name in use: %v", err)
	}

	// Changes: kept at close, with the changed files.
	if err := os.WriteFile(filepath.Join(wantPath, "sub", "new.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if in := s.WorktreeInfo(ctxFor(t)); len(in.ChangedFiles) != 1 || in.ChangedFiles[0] != "sub/new.txt" {
		t.Errorf("changed files = %+v", in)
	}
	m.Close(s.ID)
	if in := s.WorktreeInfo(ctxFor(t)); in.Removed || len(in.ChangedFiles) != 1 {
		t.Errorf("closing a changed worktree: %+v", in)
	}
	if _, err := os.Stat(wantPath); err != nil {
		t.Errorf("the changed worktree was not kept: %v", err)
	}
	// Nothing changed: removed with its branch.
	w2 := s2.Info().Worktree
	m.Close(s2.ID)
	if in := s2.WorktreeInfo(ctxFor(t)); !in.Removed {
		t.Errorf("closing an unchanged worktree: %+v", in)
	}
	if _, err := os.Stat(w2.Path); !os.IsNotExist(err) {
		t.Errorf("the unchanged worktree is still there: %v", err)
	}
	if out, _ := exec.Command("git", "-C", repo, "branch", "--list", w2.Branch).Output(); len(out) != 0 {
		t.Errorf("its branch is still there: %s", out)
	}

	if _, err := m.Create(ctxFor(t), CreateOptions{Cwd: t.TempDir(), Worktree: worktree.Option{On: true}}); err == nil || !strings.Contains(err.Error(), "not inside a git repository") {
		t.Errorf("worktree outside a repository: %v", err)
	}
	if _, err := m.Create(ctxFor(t), CreateOptions{Cwd: repo, Worktree: worktree.Option{On: true, Name: "../x"}}); err == nil || !strings.Contains(err.Error(), "invalid worktree name") {
		t.Errorf("a bad worktree name: %v", err)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
