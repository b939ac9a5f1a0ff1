package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A worktree's diff and its snapshot: what the session changed, committed
// or not, untracked files included (ignored ones not), as git sees it. The
// snapshot is a tree written through a temporary index, so the worktree's
// own index and files are never touched (a symbolic link is stored as a
// link, never followed: git does not follow links in a working tree).

// FileChange is one file of a diff.
type FileChange struct {
	Path    string `json:"path"`
	Added   int    `json:"added"`
	Removed int    `json:"removed"`
	Binary  bool   `json:"binary,omitempty"`
}

// Diff is what changed in a worktree since it was made.
type Diff struct {
	Base   string       // the commit it branched from
	Branch string       // its branch
	Files  []FileChange // path order
	Patch  string       // the unified diff, at most maxPatch bytes
	Cut    bool         // the patch was longer and is cut
}

// maxPatch bounds the patch a Diff holds.
const maxPatch = 8 << 20

// snapshot is the worktree as it is now: its HEAD, the tree of its files
// (uncommitted and untracked changes included), and whether that tree
// differs from HEAD's (something is uncommitted).
type snapshot struct {
	head, tree string
	dirty      bool
}

// snap writes the tree of the worktree's files through a temporary index.
func (w *Worktree) snap(ctx context.Context) (snapshot, error) {
	common, err := commonDir(ctx, w.Repo)
	if err != nil {
		return snapshot{}, fmt.Errorf("finding the git directory of %s: %w", w.Repo, err)
	}
	head, err := git(ctx, w.Path, nil, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return snapshot{}, fmt.Errorf("reading the worktree's HEAD: %w", err)
	}
	tmp, err := os.MkdirTemp("", "claude-agent-mcp-index-")
	if err != nil {
		return snapshot{}, err
	}
	defer os.RemoveAll(tmp)
	opts := gitOpts{write: []string{common, tmp}, env: []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}}
	for _, args := range [][]string{{"read-tree", head}, {"add", "-A", "--", "."}} {
		if _, err := gitWith(ctx, w.Path, opts, args...); err != nil {
			return snapshot{}, fmt.Errorf("reading the worktree's files: %w", err)
		}
	}
	tree, err := gitWith(ctx, w.Path, opts, "write-tree")
	if err != nil {
		return snapshot{}, fmt.Errorf("reading the worktree's files: %w", err)
	}
	headTree, err := git(ctx, w.Path, nil, "rev-parse", head+"^{tree}")
	if err != nil {
		return snapshot{}, err
	}
	return snapshot{head: head, tree: tree, dirty: tree != headTree}, nil
}

// diffArgs are the options of every diff the server reads: no external
// diff or textconv, no renames (a file is its path), no colour.
var diffArgs = []string{"--no-ext-diff", "--no-textconv", "--no-renames", "--no-color"}

// Diff is the worktree's changes since its base: committed, uncommitted and
// untracked (not ignored) files, each with its added and removed lines,
// and the patch.
func (w *Worktree) Diff(ctx context.Context) (*Diff, error) {
	s, err := w.snap(ctx)
	if err != nil {
		return nil, err
	}
	files, err := changes(ctx, w.Path, w.Base, s.tree)
	if err != nil {
		return nil, err
	}
	patch, err := git(ctx, w.Path, nil, append(append([]string{"diff"}, diffArgs...), w.Base, s.tree)...)
	if err != nil {
		return nil, fmt.Errorf("reading the worktree's diff: %w", err)
	}
	if patch != "" {
		patch += "\n" // the runner trims it
	}
	d := &Diff{Base: w.Base, Branch: w.Branch, Files: files, Patch: patch}
	if len(patch) > maxPatch {
		d.Patch, d.Cut = patch[:maxPatch], true
	}
	return d, nil
}

// changes are the files that differ between two trees or commits, with
// their line counts.
func changes(ctx context.Context, dir, from, to string) ([]FileChange, error) {
	out, err := git(ctx, dir, nil, append(append([]string{"diff"}, diffArgs...), "--numstat", "-z", from, to)...)
	if err != nil {
		return nil, fmt.Errorf("listing the changed files: %w", err)
	}
	files := []FileChange{}
	for _, rec := range strings.Split(out, "\x00") {
		parts := strings.SplitN(rec, "\t", 3)
		if len(parts) != 3 {
			continue
		}
		f := FileChange{Path: parts[2], Binary: parts[0] == "-"}
		f.Added, _ = strconv.Atoi(parts[0])
		f.Removed, _ = strconv.Atoi(parts[1])
		files = append(files, f)
	}
	return files, nil
}

// Paths are the paths of files.
func Paths(files []FileChange) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Path
	}
	return out
}
