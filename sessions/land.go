package sessions

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
)

// Review and land: a session's worktree read as a diff, and its work landed
// in the branch the worktree came from (or a pull request, or discarded),
// after which the worktree and its branch are gone and the session is
// closed: it has nowhere left to work.

// ErrNoWorktree is the error for a session that has no worktree of its own.
var ErrNoWorktree = errors.New("session has no worktree")

// messagePrompt asks the session for the commit message of its work.
const messagePrompt = "Write the commit message for the changes you made in this session: one line, imperative, at most 72 characters. " +
	"Reply with the message alone, and do not change any file."

// maxMessage bounds a commit message the session wrote.
const maxMessage = 200

// landWorktree is the session's worktree when it may be landed now: open,
// with a worktree, no query running.
func (s *Session) landWorktree() (*worktree.Worktree, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableLocked(); err != nil {
		return nil, err
	}
	if s.worktree == nil || s.worktreeFinal != nil {
		return nil, fmt.Errorf("%w: session %s was not created with worktree, so there is nothing to land or diff", ErrNoWorktree, s.ID)
	}
	switch st := s.st.State(); {
	case st == state.Running || st == state.Interrupting || st == state.Queued || s.st.Owner() == state.Query || s.st.Waiting():
		return nil, fmt.Errorf("%w: session %s is running a query, and lands only between queries", ErrBusy, s.ID)
	}
	return s.worktree, nil
}

// Diff is the session's worktree's diff against the commit it branched
// from (ErrNoWorktree without one).
func (s *Session) Diff(ctx context.Context) (*worktree.Diff, error) {
	s.mu.Lock()
	w, final := s.worktree, s.worktreeFinal
	s.mu.Unlock()
	if w == nil || final != nil && final.Removed {
		return nil, fmt.Errorf("%w: session %s has no worktree (any more)", ErrNoWorktree, s.ID)
	}
	return w.Diff(ctx)
}

// Land lands the session's worktree as how says (package worktree's ways),
// with message for what is uncommitted (and a squash); without one, the
// session is asked to write it in a short turn. Once the work has landed
// (or was discarded) the worktree and its branch are removed and the
// session is closed. An error before that changed nothing.
func (m *Manager) Land(ctx context.Context, s *Session, how, message string) (*worktree.Landed, error) {
	w, err := s.landWorktree()
	if err != nil {
		return nil, err
	}
	landed, err := w.Land(ctx, worktree.LandOptions{
		How: how, Message: strings.TrimSpace(message), Check: m.checkPath,
		WriteMessage: func(ctx context.Context) (string, error) {
			msg, err := s.writeMessage(ctx)
			if err != nil {
				s.log.Warn("the session did not write a commit message; the default is used", "err", err)
			}
			return msg, err
		},
	})
	if landed == nil || !landed.Removed {
		return landed, err
	}
	s.mu.Lock()
	s.worktreeFinal = &worktree.Info{Path: w.Path, Branch: w.Branch, ChangedFiles: worktree.Paths(landed.Files), Removed: true}
	s.mu.Unlock()
	s.log.Info("landed the session's worktree", "how", how, "target", landed.Target, "commits", len(landed.Commits), "files", len(landed.Files))
	if _, cerr := m.Close(s.ID); cerr != nil && err == nil {
		err = fmt.Errorf("landed, but closing the session: %w", cerr)
	}
	return landed, err
}

// writeMessage asks the session for a commit message: the first line of
// its answer, without quotes or a code fence.
func (s *Session) writeMessage(ctx context.Context) (string, error) {
	res, err := s.Query(ctx, messagePrompt, QueryOptions{})
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", fmt.Errorf("the turn failed: %s", res.ErrorText)
	}
	for _, line := range strings.Split(res.FinalText, "\n") {
		line = strings.Trim(strings.TrimSpace(line), "`\"'")
		if line != "" {
			return textcut.Cut(line, maxMessage), nil
		}
	}
	return "", errors.New("its answer was empty")
}
