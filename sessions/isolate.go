package sessions

import (
	"context"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
)

// Isolated worktrees live in package worktree (pure git); these names keep
// the session options and results as they were.
type (
	// WorktreeOption asks for an isolated worktree (see worktree.Option).
	WorktreeOption = worktree.Option
	// Worktree is a session's worktree.
	Worktree = worktree.Worktree
	// WorktreeInfo is what results report of a worktree.
	WorktreeInfo = worktree.Info
)

// WorktreeAuto is the worktree option that lets the server pick the name.
const WorktreeAuto = worktree.Auto

// makeWorktree makes the worktree of a new session, its repository within
// the allowed roots.
func (m *Manager) makeWorktree(ctx context.Context, cwd, name string) (*Worktree, error) {
	return worktree.Make(ctx, cwd, name, m.checkPath)
}
