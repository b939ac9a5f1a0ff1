package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/beneath"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/live"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// Rewinding a session's files to before one of its prompts: the CLI keeps
// a checkpoint of every file its tools change, per user message, when it
// runs with file checkpoints (Config.FileCheckpoints); the control request
// rewind_files restores them, known by the uuid the prompt went with
// (history.Entry.ID). The conversation is not rewound: only the files.

// ErrNoCheckpoints is a rewind of a session whose CLI keeps no file
// checkpoints: the server runs without --file-checkpoints.
var ErrNoCheckpoints = errors.New("file checkpoints are off")

// RewindResult is what a rewind changed, or with DryRun would change.
type RewindResult struct {
	Prompt int  // the prompt rewound to before (from 1)
	DryRun bool // nothing was changed
	// Files are the files changed back (absolute paths), Insertions and
	// Deletions their lines.
	Files      []string
	Insertions int
	Deletions  int
}

// Prompts returns the session's prompts, oldest first: the history's
// entries of kind "prompt". Prompt N of Rewind is the N-th, from 1.
func (s *Session) Prompts() []history.Entry {
	var out []history.Entry
	for _, e := range s.History() {
		if e.Kind == "prompt" {
			out = append(out, e)
		}
	}
	return out
}

// Rewind restores the files the session's tools changed since before its
// prompt n (counting from 1, as Prompts) to their content then; with
// dryRun it changes nothing and says what it would change. Like a query
// it needs the session idle (ErrBusy beside a running query) and its
// process (a dormant session resumes). The conversation stays as it is.
func (s *Session) Rewind(ctx context.Context, n int, dryRun bool) (*RewindResult, error) {
	if !s.m.cfg.FileCheckpoints {
		return nil, fmt.Errorf("%w: the server runs without --file-checkpoints, so session %s's CLI kept no copy of the files it changed; the operator restarts it with --file-checkpoints (CLAUDE_AGENT_MCP_FILE_CHECKPOINTS=true) to rewind the prompts sent after", ErrNoCheckpoints, s.ID)
	}
	busy := fmt.Errorf("%w: session %s is running a query, and its files change while it runs", ErrBusy, s.ID)
	if err := s.st.Enter(ctx, busy, s.m.cfg.InterruptAck+3*time.Second); err != nil {
		return nil, err
	}
	defer func() {
		s.handOff()
		s.m.pool.Idle() // a process started for the rewind may go to a waiting query
		s.m.spareOn(live.TurnEnded, CreateOptions{})
	}()
	s.mu.Lock()
	err := s.usableLocked()
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	id, err := s.promptID(n)
	if err != nil {
		return nil, err
	}
	s.stopIdleTimer()
	defer s.resetIdleTimer()
	// A dormant session resumes; the turn only waits in the queue for a
	// live place, as a query's would.
	if err := s.ensureProcess(ctx, turn.New(nil, s.m.now)); err != nil {
		return nil, err
	}
	if err := s.m.fence(s); err != nil { // the claim may have passed to another instance
		return nil, err
	}
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		return nil, fmt.Errorf("%w: %s", ErrClosed, s.ID)
	}
	return s.rewindFiles(ctx, p, n, id, dryRun)
}

// rewindFiles asks the CLI what rewinding to before prompt n (sent as id)
// changes, then, unless dryRun, rewinds: the files a rewind changes are
// those of its dry run (the CLI names none after it).
func (s *Session) rewindFiles(ctx context.Context, p *claudeagent.Process, n int, id string, dryRun bool) (*RewindResult, error) {
	plan, err := p.RewindFiles(ctx, id, true)
	if err != nil {
		return nil, fmt.Errorf("asking claude what rewinding session %s to before prompt %d changes: %w", s.ID, n, err)
	}
	if !plan.CanRewind {
		return nil, s.cannotRewind(n, plan.Error)
	}
	out := &RewindResult{Prompt: n, DryRun: dryRun, Files: plan.FilesChanged, Insertions: plan.Insertions, Deletions: plan.Deletions}
	if dryRun {
		return out, nil
	}
	if _, err := p.RewindFiles(ctx, id, false); err != nil {
		var ce *claudeagent.ControlError
		if errors.As(err, &ce) {
			return nil, s.cannotRewind(n, ce.Message)
		}
		return nil, fmt.Errorf("rewinding session %s to before prompt %d: %w", s.ID, n, err)
	}
	s.log.Info("rewound the session's files", "prompt", n, "files", len(out.Files))
	return out, nil
}

// promptID is the uuid prompt n (from 1) went to the CLI with; the error
// says the range.
func (s *Session) promptID(n int) (string, error) {
	prompts := s.Prompts()
	switch {
	case len(prompts) == 0:
		return "", fmt.Errorf("session %s has no prompts yet: nothing to rewind", s.ID)
	case n < 1 || n > len(prompts):
		return "", fmt.Errorf("prompt %d is out of range: session %s has prompts 1 to %d (claude_session_history lists them)", n, s.ID, len(prompts))
	case prompts[n-1].ID == "":
		return "", fmt.Errorf("prompt %d of session %s was recorded without the id its checkpoint is known by (by a server before this version); it cannot be rewound", n, s.ID)
	}
	return prompts[n-1].ID, nil
}

// cannotRewind is the CLI's refusal to rewind to before prompt n, in
// words that say why.
func (s *Session) cannotRewind(n int, why string) error {
	if strings.Contains(why, "No file checkpoint found") {
		return fmt.Errorf("prompt %d of session %s has no file checkpoint: it was sent while the server ran without --file-checkpoints, or its CLI's copies were lost (its conversation was replayed into a new one, or it ran on another instance of a shared store) (claude: %s)", n, s.ID, why)
	}
	return fmt.Errorf("claude cannot rewind session %s to before prompt %d: %s", s.ID, n, why)
}

// inheritCopies copies the file checkpoints of conversation parent into
// those of its fork, in the CLI config directory configDir, before the
// fork's CLI starts: the CLI links them itself on a fork, but in the jail
// it sees its own directory alone (viewAlone). The parent's directory
// is one a session may write, so it is read through beneath (no link
// followed, a regular file of one link); a copy never replaces a file.
// What cannot be copied is logged: the prompts before the fork that need
// it cannot be rewound in the fork.
func (s *Session) inheritCopies(configDir, parent, fork string) {
	from := beneath.Path{Dir: configDir, Rel: filepath.Join("file-history", parent)}
	entries, err := beneath.ReadDir(from)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("reading the file checkpoints of the conversation forked", "err", err)
		}
		return
	}
	copied := 0
	for _, e := range entries {
		if err := copyCheckpoint(beneath.Path{Dir: configDir, Rel: filepath.Join(from.Rel, e.Name())},
			beneath.Path{Dir: configDir, Rel: filepath.Join("file-history", fork, e.Name())}); err != nil {
			s.log.Warn("a file checkpoint of the conversation forked is not copied", "file", e.Name(), "err", err)
			continue
		}
		copied++
	}
	s.log.Debug("copied the file checkpoints of the conversation forked", "parent", parent, "files", copied)
}

// copyCheckpoint copies the regular file from to the new file to, unless
// to is there (copied by an earlier start of the fork).
func copyCheckpoint(from, to beneath.Path) error {
	if there, err := beneath.Exists(to); there || err != nil {
		return err
	}
	f, err := beneath.Open(from)
	if err != nil {
		return err
	}
	defer f.Close()
	return beneath.WriteNewFrom(to, f, 0o600)
}
