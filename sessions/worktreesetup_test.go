package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
)

// hookedRepo is gitRepo with a WorktreeCreate hook in its settings that
// makes a git worktree at dir/wt and leaves a marker when it runs.
func hookedRepo(t *testing.T) (repo, wt, marker string) {
	t.Helper()
	repo = gitRepo(t)
	dir := t.TempDir()
	wt, marker = filepath.Join(dir, "wt"), filepath.Join(dir, "ran")
	hook := "touch " + marker + " && git -c core.hooksPath=/dev/null worktree add -q -b hooked " + wt + " >&2 && echo " + wt
	b, _ := json.Marshal(map[string]any{"hooks": map[string]any{"WorktreeCreate": []any{
		map[string]any{"hooks": []any{map[string]any{"type": "command", "command": hook}}}}}})
	if err := os.MkdirAll(filepath.Join(repo, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".claude", "settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return repo, wt, marker
}

// TestWorktreeByHook: a repository whose settings name a WorktreeCreate
// hook gets its worktree from the hook, as the CLI would make it, and the
// session works there; where the session may run no program (the tools
// ceiling leaves Bash out) the create is refused before the hook runs,
// saying why and what to do.
func TestWorktreeByHook(t *testing.T) {
	t.Parallel()
	repo, wt, _ := hookedRepo(t)
	m := newManager(t, Config{})
	s := create(t, m, CreateOptions{Cwd: repo, Worktree: worktree.Option{On: true, Name: "feature"}})
	w := s.Info().Worktree
	if w == nil || w.Path != wt || w.Branch != "hooked" || !w.ByHook || w.Setup == nil || !w.Setup.OK || s.Info().Cwd != wt {
		t.Fatalf("worktree = %+v, cwd %s", w, s.Info().Cwd)
	}
	if r := query(t, s, "hi", QueryOptions{}); r.FinalText != hello {
		t.Errorf("query in the hook's worktree: %+v", r)
	}

	repo, _, marker := hookedRepo(t)
	m = newManager(t, Config{ToolsCeiling: []string{"Read", "Grep"}})
	_, err := m.Create(context.Background(), CreateOptions{Cwd: repo, Worktree: worktree.Option{On: true, Name: "feature"}})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "WorktreeCreate hook") || !strings.Contains(err.Error(), "may run none") {
		t.Errorf("a session that may run no program: %v", err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Errorf("the refused hook ran: %v", err)
	}
	if n := m.Count(); n != 0 {
		t.Errorf("the refused create left %d session(s)", n)
	}
}
