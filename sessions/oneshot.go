package sessions

import (
	"context"
	"errors"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/images"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/live"
)

// A session opened for a call's query, which starts at once: a one-shot
// query's (claude_direct_query: a temporary session, whose whole life is
// here) and an agent tool's (kept for its conversation). OneShot, the one
// way to open either, opens it (no process yet: its query starts one, or
// takes a warm spare) and loads the query's images; its options become
// wanted for warm spares. The spares are filled when its turn ends, not
// while the query runs, even when the call returns before (a task,
// waitSeconds; a CLI starting costs about 300 ms of CPU): the spare the
// session took is replaced when its turn ends (see
// live.Spares.DeferRefill), and so are a kept session's options'; a
// temporary session's options' once it ends. endUnstarted discards a
// temporary session when its query cannot start. endOneShot closes it once
// its result is collected (or dropped): in the background, so that the
// answer does not wait for the CLI to exit (Shutdown waits for these
// closes), or at once when it has a worktree (the answer reports what
// close did with it); its live place goes to a spare once its process has
// stopped.

// OneShot opens a session with opts for a query that its caller starts at
// once with [Session.StartRun], and loads the query's images. With
// opts.Temporary the session is discarded when the query cannot start,
// and closed once its result is collected or dropped; otherwise it stays
// for further queries, and a caller whose query cannot start discards it.
// When the images do not load, the session is discarded here.
func (m *Manager) OneShot(ctx context.Context, opts CreateOptions, in []images.Input) (*Session, []images.Image, error) {
	s, err := m.Open(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	s.oneShot = true
	s.mu.Unlock()
	m.spareOn(live.OneShotBegun, opts) // filled when the turn or the session ends
	imgs, err := s.LoadImages(in)
	if err != nil {
		m.Discard(s)
		m.spareOn(live.OneShotEnded, CreateOptions{})
		return nil, nil, err
	}
	return s, imgs, nil
}

// endUnstarted discards a temporary session whose one query could not
// start with err, and fills the spares. A second query refused as busy
// leaves the session of the first alone; a session that is not temporary
// is its caller's.
func (m *Manager) endUnstarted(s *Session, err error) {
	if !s.opts.Temporary || errors.Is(err, ErrBusy) {
		return
	}
	m.Discard(s)
	m.spareOn(live.OneShotEnded, CreateOptions{})
}

// endOneShot closes a temporary session once its result is collected or
// dropped: in the background, unless it has a worktree.
func (m *Manager) endOneShot(s *Session) {
	if s.hasWorktree() {
		m.Discard(s) // the answer says whether close kept the worktree
		m.spareOn(live.OneShotEnded, CreateOptions{})
		return
	}
	m.discardLater(s)
}

// discardLater is Discard, with the process stopped in the background: a
// one-shot query's answer need not wait for its CLI to exit (tens of
// milliseconds). Shutdown waits for these closes.
func (m *Manager) discardLater(s *Session) {
	m.unhold(s)
	m.closing.Go(func() {
		s.close()
		_ = m.closeStored(s)
		m.spareOn(live.OneShotEnded, CreateOptions{}) // its live place is free now
	})
}
