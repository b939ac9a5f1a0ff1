package worktree

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Landing a worktree: its work (what is uncommitted committed first) goes
// into the branch the worktree came from, by fast-forward, merge commit or
// squash commit, computed without a checkout (git merge-tree and
// commit-tree), so nothing changes until the new commit is known to be
// clean. Then the branch moves with its expected old value (git update-ref:
// a branch that moved meanwhile is refused, nothing changed), and where
// that branch is checked out, its checkout follows the way git's own
// fast-forward does (git read-tree -m -u, two trees), which refuses when a
// local change would be overwritten: the user's uncommitted changes and
// index stay as they were. Last the worktree and its branch are removed.

// The ways to land, Land's how.
const (
	FastForward = "fast-forward"
	Merge       = "merge"
	Squash      = "squash"
	PullRequest = "pull-request"
	Discard     = "discard"
)

// Hows are the ways to land, in the order the tool lists them.
var Hows = []string{FastForward, Merge, Squash, PullRequest, Discard}

// Who wrote a commit message (Landed.MessageBy).
const (
	ByCaller  = "caller"
	BySession = "session"
	ByDefault = "default"
)

// ErrConflict is the error of a merge or squash whose changes conflict
// with the target branch's (a *ConflictError).
var ErrConflict = errors.New("the worktree's changes conflict with the branch")

// ErrMoved is the error of a land whose target branch moved while it ran.
var ErrMoved = errors.New("the branch moved meanwhile")

// ConflictError names the files that conflict.
type ConflictError struct {
	Target string
	Files  []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%v %s in %d file(s): %s; nothing was changed: resolve them in the worktree (ask the session to merge %s into its branch), then land again, or use how pull-request",
		ErrConflict, e.Target, len(e.Files), strings.Join(e.Files, ", "), e.Target)
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// LandOptions say how to land.
type LandOptions struct {
	How     string
	Message string // the commit message for what is uncommitted (and a squash); "" asks WriteMessage
	// WriteMessage writes a one-line message when one is needed and none
	// was given (the session, asked); an error or "" takes the default.
	WriteMessage func(ctx context.Context) (string, error)
	// Check refuses a path the server may not write (the policy's roots).
	Check func(what, path string) error
}

// Landed is what a land did.
type Landed struct {
	How       string       `json:"how"`
	Target    string       `json:"target,omitempty" jsonschema:"The branch landed in."`
	Commits   []string     `json:"commits,omitempty" jsonschema:"The commits it gained, newest first."`
	Files     []FileChange `json:"files"`
	Message   string       `json:"message,omitempty"`
	MessageBy string       `json:"messageBy,omitempty" jsonschema:"caller, session (asked) or default."`
	Checkout  string       `json:"checkout,omitempty" jsonschema:"Where the branch is checked out, updated."`
	PR        string       `json:"pullRequest,omitempty"`
	Removed   bool         `json:"worktreeRemoved"`
}

// plan is a land computed: nothing has changed yet but objects.
type plan struct {
	target   string // the branch, short
	old, new string // its commit now, and after
	commits  []string
	files    []FileChange
}

// Land lands the worktree as o.How says and removes it and its branch.
// An error leaves everything as it was (except git objects nobody names),
// unless it says otherwise.
func (w *Worktree) Land(ctx context.Context, o LandOptions) (*Landed, error) {
	if !slices.Contains(Hows, o.How) {
		return nil, fmt.Errorf("how %q is not a way to land: use one of %s", o.How, strings.Join(Hows, ", "))
	}
	common, err := w.checkRepo(ctx, o.Check)
	if err != nil {
		return nil, err
	}
	switch {
	case o.How == Discard:
		if err := w.remove(ctx, common); err != nil {
			return nil, err
		}
		return &Landed{How: Discard, Files: []FileChange{}, Removed: true}, nil
	case w.Branch == "" || w.Base == "":
		return nil, fmt.Errorf("the worktree %s, made by the repository's WorktreeCreate hook, is not a git worktree on a branch of its own, so it cannot be landed here: land its work yourself, or use how discard", w.Path)
	case o.How == PullRequest:
		return w.pullRequest(ctx, o, common)
	}
	target, err := w.target(ctx)
	if err != nil {
		return nil, err
	}
	// A first plan finds a conflict before the session is asked for a
	// message (with a provisional one then).
	s, err := w.snap(ctx)
	if err != nil {
		return nil, err
	}
	first := o.Message
	if first == "" {
		first = "provisional"
	}
	p, err := w.plan(ctx, o.How, target, s, first)
	if err != nil {
		return nil, err
	}
	needed := s.dirty || o.How == Squash
	msg, by := w.message(ctx, o, needed)
	if by == BySession { // its turn may have written more
		if s, err = w.snap(ctx); err != nil {
			return nil, err
		}
	}
	if by == BySession || needed && msg != first {
		if p, err = w.plan(ctx, o.How, target, s, msg); err != nil {
			return nil, err
		}
	}
	checkout, err := w.apply(ctx, p, common, o.Check)
	if err != nil {
		return nil, err
	}
	out := &Landed{How: o.How, Target: target, Commits: p.commits, Files: p.files, Checkout: checkout}
	if s.dirty || o.How == Squash {
		out.Message, out.MessageBy = msg, by
	}
	if err := w.remove(ctx, common); err != nil {
		return out, fmt.Errorf("landed in %s (%s), but removing the worktree: %w", target, p.new, err)
	}
	out.Removed = true
	return out, nil
}

// checkRepo checks the repository and its git directory against check
// and returns the git directory.
func (w *Worktree) checkRepo(ctx context.Context, check func(what, path string) error) (string, error) {
	if check == nil {
		check = func(string, string) error { return nil }
	}
	if err := check("the repository of the worktree", w.Repo); err != nil {
		return "", err
	}
	common, err := commonDir(ctx, w.Repo)
	if err != nil {
		return "", fmt.Errorf("finding the git directory of %s: %w", w.Repo, err)
	}
	if err := check("the git directory of the worktree's repository", common); err != nil {
		return "", err
	}
	return common, nil
}

// target is the branch the worktree lands in: the one it came from, else
// (a worktree made before that was recorded) the repository's current one.
func (w *Worktree) target(ctx context.Context) (string, error) {
	if w.From != "" {
		return w.From, nil
	}
	b, err := git(ctx, w.Repo, nil, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil || b == "" {
		return "", fmt.Errorf("the worktree came from a detached HEAD in %s, so it has no branch to land in: use how pull-request, or merge branch %s yourself", w.Repo, w.Branch)
	}
	return b, nil
}

// message is the commit message and who wrote it.
func (w *Worktree) message(ctx context.Context, o LandOptions, needed bool) (string, string) {
	switch {
	case o.Message != "":
		return o.Message, ByCaller
	case !needed:
		return "", ""
	case o.WriteMessage != nil:
		if m, err := o.WriteMessage(ctx); err == nil && strings.TrimSpace(m) != "" {
			return m, BySession
		}
	}
	return "Work of " + w.Branch, ByDefault
}
