package worktree

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/beneath"
)

// A repository may make its worktrees itself: Claude Code runs the
// WorktreeCreate hooks of the settings it loads instead of `git worktree
// add` (a jj workspace, a copy with its dependencies installed), and the
// WorktreeRemove hooks instead of removing one. A hook gets on stdin
// {cwd, hook_event_name: "WorktreeCreate", name} and prints the absolute
// path of the worktree it made (or {"hookSpecificOutput": {"hookEventName":
// "WorktreeCreate", "worktreePath": …}}); WorktreeRemove gets
// {hook_event_name, worktree_path}. The server does the same with the
// repository's own settings (.claude/settings.json and
// .claude/settings.local.json, read without following a link). A hook is
// a program: the caller decides whether the session may run one, and
// starts it (under the session's ceiling).

// hookSettings are the repository's settings files that may name hooks.
var hookSettings = []string{".claude/settings.json", ".claude/settings.local.json"}

// maxSettingsBytes bounds a settings file read for its hooks.
const maxSettingsBytes = 1 << 20

// Hook is one command hook of a repository's settings.
type Hook struct {
	Command string        // run with sh -c in the repository
	Timeout time.Duration // the hook's own timeout, else defaultHookTimeout
	File    string        // the settings file that names it, for messages
}

// defaultHookTimeout is a hook's timeout when it gives none (the CLI's).
const defaultHookTimeout = 60 * time.Second

// maxHookOutput bounds what a hook's output is read of.
const maxHookOutput = 64 << 10

// Hooks returns the command hooks for event ("WorktreeCreate" or
// "WorktreeRemove") that the settings of the repository at root name.
func Hooks(root, event string) ([]Hook, error) {
	var out []Hook
	for _, rel := range hookSettings {
		b, err := beneath.ReadFile(beneath.Path{Dir: root, Rel: rel}, maxSettingsBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s for its %s hooks: %w", filepath.Join(root, rel), event, err)
		}
		var s struct {
			Hooks map[string][]struct {
				Hooks []struct {
					Type    string  `json:"type"`
					Command string  `json:"command"`
					Timeout float64 `json:"timeout"`
				} `json:"hooks"`
			} `json:"hooks"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("%s is not valid JSON (%v): fix it, or remove its %s hooks", filepath.Join(root, rel), err, event)
		}
		for _, m := range s.Hooks[event] {
			for _, h := range m.Hooks {
				if h.Type != "command" || strings.TrimSpace(h.Command) == "" {
					continue
				}
				d := time.Duration(h.Timeout * float64(time.Second))
				if d <= 0 {
					d = defaultHookTimeout
				}
				out = append(out, Hook{Command: h.Command, Timeout: d, File: rel})
			}
		}
	}
	return out, nil
}

// Root is the root of the git repository holding cwd (found with the
// hardened git), else cwd itself (a repository of another VCS, which its
// hooks know): where a repository's settings are.
func Root(ctx context.Context, cwd string) string {
	if root, err := git(ctx, cwd, nil, "rev-parse", "--show-toplevel"); err == nil {
		return root
	}
	return cwd
}

// Starter starts a hook's command (under the session's ceiling).
type Starter func(*exec.Cmd) error

// Setup is what a worktree's setup did: the repository's WorktreeCreate
// hooks, when it has them.
type Setup struct {
	Hooks  int    `json:"hooks" jsonschema:"How many WorktreeCreate hooks the repository's settings name."`
	OK     bool   `json:"ok"`
	Output string `json:"output,omitempty" jsonschema:"The end of a failed hook's output."`
}

// runHook runs h in root with input on stdin and returns its stdout.
func runHook(ctx context.Context, root string, h Hook, input any, start Starter) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	in, _ := json.Marshal(input)
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", h.Command)
	cmd.Dir = root
	cmd.Env = append(gitEnv(), "CLAUDE_PROJECT_DIR="+root)
	cmd.Stdin = bytes.NewReader(in)
	var out, errb capped
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = time.Second
	if err := start(cmd); err != nil {
		return "", fmt.Errorf("starting the hook %q of %s: %w", h.Command, h.File, err)
	}
	if err := cmd.Wait(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("timed out after %s", h.Timeout)
		}
		return "", fmt.Errorf("the hook %q of %s failed: %v: %s", h.Command, h.File, err, tail(errb.String()+out.String()))
	}
	return out.String(), nil
}

// hookPath reads the worktree's path from a WorktreeCreate hook's output:
// the hookSpecificOutput's worktreePath, else the output itself (its last
// line).
func hookPath(out string) string {
	var j struct {
		HookSpecificOutput struct {
			WorktreePath string `json:"worktreePath"`
		} `json:"hookSpecificOutput"`
	}
	if json.Unmarshal([]byte(out), &j) == nil && j.HookSpecificOutput.WorktreePath != "" {
		return j.HookSpecificOutput.WorktreePath
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// MakeByHooks makes the worktree named name of the repository at root (see
// Root) as Claude Code would with the repository's WorktreeCreate hooks: each
// runs in turn until one prints the path of a directory it made, which
// must be absolute, not reached through a link, and pass check. When it is
// a git worktree, its branch and base are read, so that it can be
// reviewed, landed and finished like one the server made.
func MakeByHooks(ctx context.Context, root, name string, hooks []Hook, check func(what, path string) error, start Starter) (*Worktree, error) {
	if !nameRE().MatchString(name) {
		return nil, fmt.Errorf("invalid worktree name %q: use letters, digits, '.', '_' and '-' (at most 64)", name)
	}
	var failures []string
	for _, h := range hooks {
		out, err := runHook(ctx, root, h, map[string]string{"cwd": root, "hook_event_name": "WorktreeCreate", "name": name}, start)
		if err != nil {
			failures = append(failures, err.Error())
			continue
		}
		path := hookPath(out)
		if path == "" {
			failures = append(failures, fmt.Sprintf("the hook %q of %s printed no path", h.Command, h.File))
			continue
		}
		w, err := hookWorktree(ctx, root, path, check)
		if err != nil {
			return nil, fmt.Errorf("the hook %q of %s: %w", h.Command, h.File, err)
		}
		w.Setup = &Setup{Hooks: len(hooks), OK: true}
		return w, nil
	}
	return nil, fmt.Errorf("the repository's WorktreeCreate hooks made no worktree: %s", strings.Join(failures, "; "))
}

// hookWorktree is the worktree a hook made at path.
func hookWorktree(ctx context.Context, root, path string, check func(what, path string) error) (*Worktree, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("it printed %q, not an absolute path", path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("the worktree it printed, %s: %w", path, err)
	}
	if real != filepath.Clean(path) {
		return nil, fmt.Errorf("the worktree it printed, %s, is reached through a link (to %s): refused", path, real)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("the worktree it printed, %s, is not a directory", path)
	}
	if err := check("the worktree a WorktreeCreate hook made", real); err != nil {
		return nil, err
	}
	w := &Worktree{Path: real, Repo: root, Rel: ".", ByHook: true}
	if top, err := git(ctx, real, nil, "rev-parse", "--show-toplevel"); err == nil && top == real {
		w.Branch, _ = git(ctx, real, nil, "symbolic-ref", "--quiet", "--short", "HEAD")
		w.Base, _ = git(ctx, real, nil, "rev-parse", "--verify", "HEAD")
	}
	return w, nil
}

// removeByHooks runs the repository's WorktreeRemove hooks for w; ran is
// false when it has none.
func (w *Worktree) removeByHooks(ctx context.Context, start Starter) (ran bool, err error) {
	hooks, err := Hooks(w.Repo, "WorktreeRemove")
	if err != nil || len(hooks) == 0 {
		return false, err
	}
	for _, h := range hooks {
		if _, err := runHook(ctx, w.Repo, h, map[string]string{"cwd": w.Repo, "hook_event_name": "WorktreeRemove", "worktree_path": w.Path}, start); err != nil {
			return true, err
		}
	}
	return true, nil
}

// capped is a buffer that keeps the first maxHookOutput bytes.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := maxHookOutput - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// tail is the end of a hook's output, for a message.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 500 {
		i := len(s) - 500
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++ // not into a character
		}
		s = "…" + s[i:]
	}
	return s
}
