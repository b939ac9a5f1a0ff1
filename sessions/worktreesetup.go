package sessions

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
)

// makeWorktree makes the worktree named name for a session with opts, as
// the CLI would: by the repository's WorktreeCreate hooks when its
// settings name any, else with git (worktree.Make, which copies what
// .worktreeinclude names). A hook is a program: a session that may run
// none is refused, with what to do, before anything runs; otherwise each
// hook runs under the session's ceiling, as the CLI's would.
func (m *Manager) makeWorktree(ctx context.Context, opts *CreateOptions, name string) (*worktree.Worktree, error) {
	root := worktree.Root(ctx, opts.Cwd)
	if err := m.checkPath("the repository of the worktree", root); err != nil {
		return nil, err
	}
	hooks, err := worktree.Hooks(root, "WorktreeCreate")
	if err != nil {
		return nil, err
	}
	if len(hooks) == 0 {
		return worktree.Make(ctx, opts.Cwd, name, m.checkPath) // its repository within the allowed roots
	}
	if !m.policy.MayRunPrograms(opts) {
		return nil, fmt.Errorf("%w: the repository's worktree setup, the WorktreeCreate hook %q of %s, runs a program, and this session may run none (its tools, or the server's --allowed-tools-ceiling or --http-allow, leave Bash out): leave worktree out, or ask the operator for a session that may run programs",
			ErrRefused, hooks[0].Command, filepath.Join(root, hooks[0].File))
	}
	start := m.hookStarter(opts)
	w, err := worktree.MakeByHooks(ctx, root, name, hooks, m.checkPath, start)
	if err != nil {
		return nil, err
	}
	w.Start = start
	return w, nil
}

// hookStarter starts a worktree hook of a session with opts under the
// session's ceiling (the kernel's, when it is on), in a jail of its own
// when the server jails its CLIs.
func (m *Manager) hookStarter(opts *CreateOptions) worktree.Starter {
	return func(cmd *exec.Cmd) error {
		c := m.policy.Ceiling(opts, opts.Cwd)
		if c == nil {
			return cmd.Start()
		}
		// What the session's Bash may: the CLI's reads and writes (its
		// ceiling's needs, for a shell).
		hc := c.With(claudeagent.CLINeeds("/bin/sh", cmd.Env))
		hc.Jail = m.cfg.Jail
		return hc.Start(cmd)
	}
}
