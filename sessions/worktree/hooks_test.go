//go:build unix

package worktree

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hookRepo is a repository whose settings name the WorktreeCreate hook
// create and a WorktreeRemove hook that records its input in
// out/remove.json and removes the worktree at out/wt.
func hookRepo(t *testing.T, create, out string) string {
	t.Helper()
	repo, _ := hostileRepo(t)
	settings := map[string]any{"hooks": map[string]any{
		"WorktreeCreate": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": create}}}},
		"WorktreeRemove": []any{map[string]any{"hooks": []any{map[string]any{"type": "command",
			"command": "cat > " + filepath.Join(out, "remove.json") + " && git -c core.hooksPath=/dev/null worktree remove --force " + filepath.Join(out, "wt")}}}},
	}}
	b, _ := json.Marshal(settings)
	write(t, filepath.Join(repo, ".claude", "settings.json"), string(b))
	return repo
}

// TestMakeByHooks: the repository's WorktreeCreate hook makes the
// worktree (given the name on stdin, as Claude Code gives it), its git
// branch and base are read, and with nothing changed Finish removes it
// through the WorktreeRemove hook.
func TestMakeByHooks(t *testing.T) {
	out := t.TempDir()
	wt := filepath.Join(out, "wt")
	create := "cat > " + filepath.Join(out, "create.json") + " && git -c core.hooksPath=/dev/null worktree add -q -b from-hook " + wt + " >&2 && echo setting up >&2 && echo " + wt
	repo := hookRepo(t, create, out)
	hooks, err := Hooks(repo, "WorktreeCreate")
	if err != nil || len(hooks) != 1 {
		t.Fatalf("Hooks = %v, %v", hooks, err)
	}
	ctx := context.Background()
	allow := func(string, string) error { return nil }
	start := func(cmd *exec.Cmd) error { return cmd.Start() }
	w, err := MakeByHooks(ctx, repo, "feature", hooks, allow, start)
	if err != nil {
		t.Fatal(err)
	}
	if !w.ByHook || w.Path != wt || w.Branch != "from-hook" || w.Base == "" || w.Setup == nil || !w.Setup.OK {
		t.Errorf("the hook's worktree: %+v (setup %+v)", w, w.Setup)
	}
	in, _ := os.ReadFile(filepath.Join(out, "create.json"))
	var got map[string]string
	if json.Unmarshal(in, &got) != nil || got["hook_event_name"] != "WorktreeCreate" || got["name"] != "feature" || got["cwd"] != repo {
		t.Errorf("the hook's input: %s", in)
	}
	// A session loaded from the store has no starter: its worktree is kept.
	if in, err := w.Finish(ctx); err != nil || in.Removed {
		t.Errorf("Finish without a starter: %+v, %v", in, err)
	}
	w.Start = start
	info, err := w.Finish(ctx)
	if err != nil || !info.Removed {
		t.Fatalf("Finish: %+v, %v", info, err)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Errorf("the worktree is still there after its WorktreeRemove hook: %v", err)
	}
	rm, _ := os.ReadFile(filepath.Join(out, "remove.json"))
	if !strings.Contains(string(rm), `"worktree_path":"`+wt+`"`) {
		t.Errorf("the WorktreeRemove hook's input: %s", rm)
	}
}

// TestMakeByHooksRefuses: a hook that fails, prints a relative path or a
// path through a link makes no worktree, and the error says why (with the
// end of a failed hook's output).
func TestMakeByHooksRefuses(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	allow := func(string, string) error { return nil }
	start := func(cmd *exec.Cmd) error { return cmd.Start() }
	for _, tc := range []struct{ command, want string }{
		{"echo cannot make it >&2; exit 3", "cannot make it"},
		{"echo relative/dir", "not an absolute path"},
		{"echo " + link, "reached through a link"},
		{"true", "printed no path"},
	} {
		repo := hookRepo(t, tc.command, t.TempDir())
		hooks, _ := Hooks(repo, "WorktreeCreate")
		_, err := MakeByHooks(context.Background(), repo, "x", hooks, allow, start)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("hook %q: %v, want %q", tc.command, err, tc.want)
		}
	}
}

// TestLocalSettingsCopied: a new worktree gets the repository's
// .claude/settings.local.json (git-ignored), as Claude Code's do, with or
// without a .worktreeinclude; a link there is not followed.
func TestLocalSettingsCopied(t *testing.T) {
	repo, _ := hostileRepo(t)
	write(t, filepath.Join(repo, ".claude", "settings.local.json"), `{"permissions":{"allow":["Bash(npm test)"]}}`)
	w, err := Make(context.Background(), repo, "one", func(string, string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(w.Path, ".claude", "settings.local.json"))
	if err != nil || !strings.Contains(string(b), "npm test") || w.Copied == nil || w.Copied.Count != 1 {
		t.Errorf("settings.local.json in the worktree: %q, %v; copied %+v", b, err, w.Copied)
	}

	secret := filepath.Join(t.TempDir(), "secret.json")
	write(t, secret, `{"server":"secret"}`)
	os.Remove(filepath.Join(repo, ".claude", "settings.local.json"))
	if err := os.Symlink(secret, filepath.Join(repo, ".claude", "settings.local.json")); err != nil {
		t.Fatal(err)
	}
	w, err = Make(context.Background(), repo, "two", func(string, string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(w.Path, ".claude", "settings.local.json")); !os.IsNotExist(err) {
		t.Errorf("a linked settings.local.json was copied: %v", err)
	}
	if w.Copied == nil || len(w.Copied.Skipped) != 1 {
		t.Errorf("the link is not reported as skipped: %+v", w.Copied)
	}
}
