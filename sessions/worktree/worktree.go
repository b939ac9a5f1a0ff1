// Package worktree makes, inspects and finishes the isolated git worktrees
// sessions may run in, and copies into a new one the ignored files its
// repository's .worktreeinclude names; or has the repository's
// WorktreeCreate hooks make it (MakeByHooks); it reads a worktree's diff
// and lands its work in the branch it came from (or discards it). It is
// git and those hooks: it knows nothing of sessions, the CLI or MCP; the
// caller checks paths against its policy (Make's check) and starts a hook
// (under the session's ceiling).
package worktree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/beneath"
)

// Isolated worktrees: a session may run in a git worktree of its own, on a
// new branch, so that sessions working on one repository in parallel do
// not write into the same files. The server makes the worktree with git
// itself (not the CLI's --worktree): it is made before the CLI starts, so
// its path and branch are known at create and stable across dormancy,
// resume and restarts; it works the same with every CLI version; and the
// server decides what happens to it at close (removed when nothing
// changed, kept otherwise) instead of leaving every worktree behind, locked.

// Auto is the worktree option that lets the server pick the name.
const Auto = "auto"

// Option asks for an isolated worktree: a name, or [Auto]
// (a name is chosen). The zero value asks for none.
type Option struct {
	On   bool
	Name string
}

// MarshalJSON writes the name, or true when the server picks it (the form
// the store has always held).
func (w Option) MarshalJSON() ([]byte, error) {
	if w.Name != "" {
		return json.Marshal(w.Name)
	}
	return json.Marshal(w.On)
}

// UnmarshalJSON reads a name, "auto", or "" (none); and true or false,
// which sessions persisted before the string form carry.
func (w *Option) UnmarshalJSON(b []byte) error {
	var on bool
	if json.Unmarshal(b, &on) == nil {
		*w = Option{On: on}
		return nil
	}
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return errors.New(`worktree must be a name, or "auto" for one the server picks`)
	}
	switch name {
	case "":
		*w = Option{}
	case Auto:
		*w = Option{On: true}
	default:
		*w = Option{On: true, Name: name}
	}
	return nil
}

// Worktree is a session's worktree.
type Worktree struct {
	Path   string `json:"path"`           // the worktree's root
	Branch string `json:"branch"`         // the branch it is on
	Base   string `json:"base"`           // the commit it started from
	Repo   string `json:"repo"`           // the root of the repository it belongs to
	From   string `json:"from,omitempty"` // the branch the repository was on when it was made (where Land lands)
	Rel    string `json:"rel"`            // where in it the session works (cwd's place in the repository)
	// ByHook: the repository's WorktreeCreate hook made it (MakeByHooks);
	// its WorktreeRemove hooks remove it.
	ByHook bool `json:"byHook,omitempty"`
	// Copied is what Make copied in of the ignored files .worktreeinclude
	// names (nil without one); Setup what the repository's WorktreeCreate
	// hooks did (nil without any). Neither is stored.
	Copied *Copied `json:"-"`
	Setup  *Setup  `json:"-"`
	// Start starts the repository's WorktreeRemove hooks of a worktree
	// made by hooks, under the session's ceiling; without it (a session
	// loaded from the store) Finish keeps such a worktree.
	Start Starter `json:"-"`
}

// Cwd is the directory the session works in.
func (w *Worktree) Cwd() string { return filepath.Join(w.Path, w.Rel) }

// Info is what results report of a worktree.
type Info struct {
	Path         string   `json:"path"`
	Branch       string   `json:"branch"`
	ChangedFiles []string `json:"changedFiles" jsonschema:"Files changed or added since it was made, committed or not (at most 100)."`
	Removed      bool     `json:"removed,omitempty" jsonschema:"True when the session was closed with nothing changed and the worktree and its branch were removed."`
	Copied       *Copied  `json:"copied,omitempty" jsonschema:"When it was made: the git-ignored files its repository's .worktreeinclude names, copied in."`
	Setup        *Setup   `json:"setup,omitempty" jsonschema:"When it was made by the repository's WorktreeCreate hooks: whether they succeeded."`
}

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })

// maxChangedFiles bounds the list of changed files reported.
const maxChangedFiles = 100

// Make makes a worktree of the repository holding cwd, on a new branch
// from its HEAD, at <repo>/.claude/worktrees/<name> (where the CLI's own
// --worktree puts them), keeps it out of the repository's status, and
// copies in the ignored files the repository's .worktreeinclude names
// (reported in Copied).
func Make(ctx context.Context, cwd, name string, check func(what, path string) error) (*Worktree, error) {
	if !nameRE().MatchString(name) {
		return nil, fmt.Errorf("invalid worktree name %q: use letters, digits, '.', '_' and '-' (at most 64)", name)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, errors.New("worktree needs git, which is not on the server's PATH")
	}
	root, err := git(ctx, cwd, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("cwd %q is not inside a git repository, and worktree needs one: pass a cwd in a repository, or leave worktree out", cwd)
	}
	base, err := git(ctx, root, nil, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return nil, fmt.Errorf("the repository %s has no commit yet, and a worktree starts from one: commit first, or leave worktree out", root)
	}
	realCwd, _ := filepath.EvalSymlinks(cwd)
	realRoot, _ := filepath.EvalSymlinks(root)
	rel, err := filepath.Rel(realRoot, realCwd)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = "."
	}
	from, _ := git(ctx, root, nil, "symbolic-ref", "--quiet", "--short", "HEAD") // "" on a detached HEAD
	w := &Worktree{Path: filepath.Join(root, worktreesDir, name), Branch: "worktree-" + name, Base: base, Repo: root, Rel: rel, From: from}
	if err := check("the repository of the worktree", root); err != nil {
		return nil, fmt.Errorf("the worktree would be made at %s: %w", w.Path, err)
	}
	// The repository's git directory is written too: it must be as much
	// the caller's as the repository (a .git file may point anywhere).
	common, err := commonDir(ctx, root)
	if err != nil {
		return nil, fmt.Errorf("finding the git directory of %s: %w", root, err)
	}
	if err := check("the git directory of the worktree's repository", common); err != nil {
		return nil, fmt.Errorf("the worktree would be made in %s: %w", common, err)
	}
	// .claude/worktrees is made here beneath the repository, never
	// through a link a session planted (git would follow it).
	if err := prepareWorktrees(root, name); err != nil {
		return nil, err
	}
	if _, err := git(ctx, root, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+w.Branch); err == nil {
		return nil, fmt.Errorf("branch %s exists already in %s: pick another worktree name", w.Branch, root)
	}
	if _, err := git(ctx, root, []string{root, common}, "worktree", "add", "--quiet", "-b", w.Branch, w.Path, base); err != nil {
		return nil, fmt.Errorf("making the worktree: %w", err)
	}
	// cwd's place may hold no tracked file (git has no empty directories).
	if err := os.MkdirAll(w.Cwd(), 0o755); err != nil {
		return nil, fmt.Errorf("making %s in the worktree: %w", w.Rel, err)
	}
	w.Copied = include(ctx, root, w.Path)
	return w, nil
}

// worktreesDir is where in a repository its worktrees are made (where the
// CLI's own --worktree puts them).
const worktreesDir = ".claude/worktrees"

// prepareWorktrees makes root's worktrees directory (without following a
// link: package beneath), ignored by git through a .gitignore of its own
// (the repository's status stays clean; its .git is not written), and
// refuses a name taken by anything already.
func prepareWorktrees(root, name string) error {
	ignore := beneath.Path{Dir: root, Rel: filepath.Join(worktreesDir, ".gitignore")}
	if err := beneath.WriteNew(ignore, []byte("# claude-agent-mcp's worktrees of sessions: none is part of the repository\n*\n"), 0o644); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("making %s: %w", filepath.Join(root, worktreesDir), err)
	}
	if there, err := beneath.Exists(beneath.Path{Dir: root, Rel: filepath.Join(worktreesDir, name)}); err != nil || there {
		if err == nil {
			return fmt.Errorf("worktree %q exists already at %s: pick another name (or remove it with git worktree remove)", name, filepath.Join(root, worktreesDir, name))
		}
		return fmt.Errorf("worktree %q cannot be made at %s: %v", name, filepath.Join(root, worktreesDir, name), err)
	}
	return nil
}

// changed lists what changed in the worktree since it was made: files
// modified, added or deleted (committed or not, untracked included), and
// whether there are commits.
func (w *Worktree) Changed(ctx context.Context) (files []string, commits bool, err error) {
	status, err := git(ctx, w.Path, nil, "status", "--porcelain=v1", "-uall", "-z")
	if err != nil {
		return nil, false, err
	}
	set := map[string]bool{}
	entries := strings.Split(status, "\x00")
	for i := 0; i < len(entries); i++ {
		e := entries[i]
		if len(e) < 4 {
			continue
		}
		set[e[3:]] = true
		if e[0] == 'R' || e[0] == 'C' {
			i++ // the source path of a rename follows
		}
	}
	head, err := git(ctx, w.Path, nil, "rev-parse", "HEAD")
	if err != nil {
		return nil, false, err
	}
	if head != w.Base {
		commits = true
		diff, err := git(ctx, w.Path, nil, "diff", "--no-ext-diff", "--no-textconv", "--name-only", "-z", w.Base, head)
		if err != nil {
			return nil, false, err
		}
		for _, f := range strings.Split(diff, "\x00") {
			if f != "" {
				set[f] = true
			}
		}
	}
	for f := range set {
		files = append(files, f)
	}
	slices.Sort(files)
	return files, commits, nil
}

// info reports the worktree as it is now.
func (w *Worktree) Info(ctx context.Context) *Info {
	in := &Info{Path: w.Path, Branch: w.Branch, ChangedFiles: []string{}}
	if files, _, err := w.Changed(ctx); err == nil {
		in.ChangedFiles = files[:min(len(files), maxChangedFiles)]
	}
	return in
}

// finish is called at close: a worktree with nothing changed and no commits
// is removed with its branch; one with changes is kept. It reports what it
// did.
func (w *Worktree) Finish(ctx context.Context) (*Info, error) {
	in := w.Info(ctx)
	files, commits, err := w.Changed(ctx)
	if err != nil {
		return in, fmt.Errorf("checking worktree %s: %w; it is kept", w.Path, err)
	}
	if len(files) > 0 || commits {
		return in, nil
	}
	if w.ByHook {
		if w.Start == nil {
			return in, nil
		}
		ran, err := w.removeByHooks(ctx, w.Start)
		if err != nil {
			return in, fmt.Errorf("removing worktree %s: %w; it is kept", w.Path, err)
		}
		in.Removed = ran
		return in, nil
	}
	common, err := commonDir(ctx, w.Repo)
	if err != nil {
		return in, fmt.Errorf("finding the git directory of %s: %w; the worktree is kept", w.Repo, err)
	}
	write := []string{w.Repo, common}
	if _, err := git(ctx, w.Repo, write, "worktree", "remove", w.Path); err != nil {
		return in, fmt.Errorf("removing worktree %s: %w", w.Path, err)
	}
	if _, err := git(ctx, w.Repo, write, "branch", "-D", w.Branch); err != nil {
		return in, fmt.Errorf("removing branch %s: %w", w.Branch, err)
	}
	in.Removed = true
	return in, nil
}
