package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// identity are the settings that give commits an author and committer
// where git has none (no user.name or user.email anywhere, nor their
// variables): the server's own name, so that landing never fails for it.
func identity(ctx context.Context, dir string) []string {
	var out []string
	for _, k := range []struct{ key, env, def string }{
		{"user.name", "GIT_AUTHOR_NAME", "claude-agent-mcp"},
		{"user.email", "GIT_AUTHOR_EMAIL", "claude-agent-mcp@localhost"},
	} {
		if v, _ := git(ctx, dir, nil, "config", "--get", k.key); v != "" || os.Getenv(k.env) != "" {
			continue
		}
		out = append(out, "-c", k.key+"="+k.def)
	}
	return out
}

// commitTree makes a commit object of tree with parents and msg; no
// branch moves.
func commitTree(ctx context.Context, dir, common, tree, msg string, parents ...string) (string, error) {
	args := []string{"commit-tree", tree, "-m", msg}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	c, err := gitWith(ctx, dir, gitOpts{write: []string{common}, config: identity(ctx, dir)}, args...)
	if err != nil {
		return "", fmt.Errorf("making a commit: %w", err)
	}
	return c, nil
}

// plan computes a land of snapshot s into target by how, with msg for a
// commit of what is uncommitted and for a squash: the target's new commit,
// the commits it gains and the files that change. It refuses a conflict, a
// fast-forward that is not one and a land of nothing.
func (w *Worktree) plan(ctx context.Context, how, target string, s snapshot, msg string) (*plan, error) {
	common, err := commonDir(ctx, w.Repo)
	if err != nil {
		return nil, err
	}
	old, err := git(ctx, w.Repo, nil, "rev-parse", "--verify", "refs/heads/"+target+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("the branch %s the worktree came from is gone from %s: use how pull-request or discard", target, w.Repo)
	}
	tip := s.head
	if s.dirty {
		if tip, err = commitTree(ctx, w.Path, common, s.tree, msg, s.head); err != nil {
			return nil, err
		}
	}
	if isAncestor(ctx, w.Repo, tip, old) {
		return nil, fmt.Errorf("nothing to land: %s already has everything of the worktree's branch %s; use how discard", target, w.Branch)
	}
	p := &plan{target: target, old: old}
	switch how {
	case FastForward:
		if !isAncestor(ctx, w.Repo, old, tip) {
			return nil, fmt.Errorf("%s cannot be fast-forwarded to the worktree's branch: it has commits the worktree lacks (it moved since the worktree was made); nothing was changed: use how merge or squash", target)
		}
		p.new = tip
	case Merge, Squash:
		tree, err := mergeTree(ctx, w.Repo, common, target, old, tip)
		if err != nil {
			return nil, err
		}
		if how == Merge {
			p.new, err = commitTree(ctx, w.Repo, common, tree, fmt.Sprintf("Merge branch '%s' into %s", w.Branch, target), old, tip)
		} else {
			p.new, err = commitTree(ctx, w.Repo, common, tree, msg, old)
		}
		if err != nil {
			return nil, err
		}
	}
	list, err := git(ctx, w.Repo, nil, "rev-list", old+".."+p.new)
	if err != nil {
		return nil, err
	}
	p.commits = strings.Fields(list)
	if p.files, err = changes(ctx, w.Repo, old, p.new); err != nil {
		return nil, err
	}
	return p, nil
}

// isAncestor reports whether commit a is an ancestor of b (or b).
func isAncestor(ctx context.Context, dir, a, b string) bool {
	_, err := git(ctx, dir, nil, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// mergeTree merges tip into old without a checkout and returns the tree;
// a conflict is a *ConflictError naming the files.
func mergeTree(ctx context.Context, dir, common, target, old, tip string) (string, error) {
	out, err := gitWith(ctx, dir, gitOpts{write: []string{common}}, "merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", old, tip)
	fields := strings.Split(out, "\x00")
	if err != nil && strings.Contains(err.Error(), "exit status 1") && len(fields) > 1 {
		var files []string
		for _, f := range fields[1:] {
			if f != "" {
				files = append(files, f)
			}
		}
		return "", &ConflictError{Target: target, Files: files}
	}
	if err != nil {
		return "", fmt.Errorf("merging the worktree's branch into %s: %w", target, err)
	}
	return fields[0], nil
}

// apply moves the target branch from p.old to p.new, and its checkout with
// it where it is checked out (it returns where), or changes nothing.
func (w *Worktree) apply(ctx context.Context, p *plan, common string, check func(what, path string) error) (string, error) {
	ref := "refs/heads/" + p.target
	checkout, err := checkedOut(ctx, w.Repo, ref)
	if err != nil {
		return "", err
	}
	if checkout != "" {
		if check != nil {
			if err := check("the checkout of "+p.target, checkout); err != nil {
				return "", err
			}
		}
		// Stale stat data alone would make a clean file look changed.
		_, _ = gitWith(ctx, checkout, gitOpts{write: []string{checkout, common}}, "update-index", "-q", "--refresh")
		if _, err := gitWith(ctx, checkout, gitOpts{write: []string{checkout, common}}, "read-tree", "-m", "-u", "-n", p.old, p.new); err != nil {
			return "", localChanges(p.target, checkout, err)
		}
	}
	if _, err := gitWith(ctx, w.Repo, gitOpts{write: []string{common}}, "update-ref", "-m", "claude-agent-mcp: land "+w.Branch, ref, p.new, p.old); err != nil {
		now, _ := git(ctx, w.Repo, nil, "rev-parse", "--verify", ref)
		return "", fmt.Errorf("%w: %s was at %s when the land was computed and is at %s now; nothing was changed: land again", ErrMoved, p.target, short(p.old), short(now))
	}
	if checkout == "" {
		return "", nil
	}
	if _, err := gitWith(ctx, checkout, gitOpts{write: []string{checkout, common}}, "read-tree", "-m", "-u", p.old, p.new); err != nil {
		// Back as it was: the branch moved only if nobody moved it since.
		if _, rerr := gitWith(ctx, w.Repo, gitOpts{write: []string{common}}, "update-ref", ref, p.old, p.new); rerr != nil {
			return "", fmt.Errorf("updating the checkout of %s at %s failed (%v) and %s could not be moved back: %w", p.target, checkout, err, p.target, rerr)
		}
		return "", localChanges(p.target, checkout, err)
	}
	return checkout, nil
}

// localChanges is the error of a checkout whose local changes the land
// would overwrite, naming the files git names.
func localChanges(target, checkout string, err error) error {
	var files []string
	for _, line := range strings.Split(err.Error(), "\n") {
		if f, ok := strings.CutPrefix(line, "\t"); ok {
			files = append(files, strings.TrimSpace(f))
		}
	}
	what := "local changes"
	if len(files) > 0 {
		what = "local changes to " + strings.Join(files, ", ")
	}
	return fmt.Errorf("%s is checked out at %s, and landing would overwrite its %s; nothing was changed: commit or stash them there, then land again (git said: %v)", target, checkout, what, firstLine(err))
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func short(c string) string { return c[:min(len(c), 12)] }

// checkedOut is where ref is checked out among the repository's worktrees
// ("" nowhere).
func checkedOut(ctx context.Context, repo, ref string) (string, error) {
	out, err := git(ctx, repo, nil, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return "", fmt.Errorf("listing the worktrees of %s: %w", repo, err)
	}
	path := ""
	for _, line := range strings.Split(out, "\x00") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			path = p
		}
		if line == "branch "+ref {
			return path, nil
		}
	}
	return "", nil
}

// remove removes the worktree (its files, ignored ones too) and its
// branch; one the repository's WorktreeCreate hooks made, by its
// WorktreeRemove hooks (the branch is theirs), else as a git worktree.
func (w *Worktree) remove(ctx context.Context, common string) error {
	if w.ByHook && w.Start != nil {
		ran, err := w.removeByHooks(ctx, w.Start)
		if err != nil {
			return fmt.Errorf("removing worktree %s by the repository's WorktreeRemove hooks: %w", w.Path, err)
		}
		if ran {
			return nil
		}
	}
	if w.ByHook && w.Branch == "" {
		return fmt.Errorf("the worktree %s, made by the repository's WorktreeCreate hook, has no WorktreeRemove hook to run here and is no git worktree: remove it yourself", w.Path)
	}
	write := []string{w.Repo, common}
	if _, err := git(ctx, w.Repo, write, "worktree", "remove", "--force", w.Path); err != nil {
		return fmt.Errorf("removing worktree %s: %w", w.Path, err)
	}
	if _, err := git(ctx, w.Repo, write, "branch", "-D", w.Branch); err != nil {
		return fmt.Errorf("removing branch %s: %w", w.Branch, err)
	}
	return nil
}

// errNoGH is the error of a pull request where gh is missing.
var errNoGH = errors.New("how pull-request needs the gh command on the server's PATH, and it is not there: land with fast-forward, merge or squash, or push the branch and open the pull request yourself")

// abs is path made absolute against dir.
func abs(dir, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}
