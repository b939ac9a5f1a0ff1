package sessions

import (
	"context"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
)

// A session's process after its start: the pump that feeds the running
// turn and notices the process's end, dormancy (idle timeout, eviction),
// close and shutdown.

// pump reads the process's messages and feeds the running turn. When the
// process ends it fails the running turn and makes the session dormant.
func (s *Session) pump(p *claudeagent.Process, done chan struct{}) {
	defer close(done)
	for {
		m, err := p.Next(context.Background())
		if err != nil {
			break
		}
		if sm, ok := m.(*claudeagent.SystemMessage); ok {
			s.noteSystem(sm)
		}
		s.mu.Lock()
		t := s.cur
		s.mu.Unlock()
		if t == nil {
			s.log.Debug("message outside a query", "type", m.Type())
			continue
		}
		s.steerMu.Lock()
		if t.Handle(m) {
			s.endTurn(t)
		}
		s.steerMu.Unlock()
	}
	exitErr := p.Wait()
	s.m.pool.Release(s.holder())
	s.mu.Lock()
	t := s.cur
	if s.proc == p {
		s.proc = nil
		if s.st.State() != state.Interrupting { // an interrupted turn's end settles it (Session.finish)
			s.st.MoveLocked(state.Dormant)
		}
	}
	s.mu.Unlock()
	if t != nil {
		reason := "the claude process ended during the turn"
		if exitErr != nil {
			reason = "the claude process ended during the turn: " + exitErr.Error()
		}
		t.Fail(reason)
	}
	s.log.Debug("claude process ended", "err", exitErr)
	s.m.released(s) // another instance sharing the store may run it now
}

// noteSystem logs what the operator should see of the CLI's system
// messages, in a turn or not: a hook that failed (a program the kernel's
// ceiling refused says so here: "EACCES: permission denied"), an MCP
// server that did not start.
func (s *Session) noteSystem(m *claudeagent.SystemMessage) {
	switch {
	case m.Subtype == "hook_response" && m.Outcome != "" && m.Outcome != "success":
		s.log.Warn("a hook of the session failed", "hook", m.HookName, "outcome", m.Outcome, "output", textcut.Cut(m.Output, 500))
	case m.Subtype == "init":
		for _, srv := range m.MCPServers {
			if srv.Status == "failed" {
				s.log.Warn("an MCP server of the session did not start", "server", srv.Name)
			}
		}
	}
}

// close marks the session closed, interrupts a running query and stops the
// process. It returns when the process is gone.
func (s *Session) close() {
	s.saves.Wait() // a turn's record and cost reach the store before the session closes there
	s.mu.Lock()
	if s.st.State() == state.Closed {
		s.mu.Unlock()
		return
	}
	s.st.MoveLocked(state.Closed)
	s.wakeParkedLocked()
	if s.idleTimer != nil {
		s.idleTimer.Stop()
	}
	w := s.worktree
	if s.worktreeFinal != nil {
		w = nil // landed or discarded (land.go): gone already
	}
	s.mu.Unlock()
	s.shutdown()
	if w != nil {
		in, err := w.Finish(context.Background())
		if err != nil {
			s.log.Warn("finishing the session's worktree", "err", err)
		} else if in.Removed {
			s.log.Info("removed the session's worktree: nothing changed in it", "path", w.Path)
		} else {
			s.log.Info("kept the session's worktree: it has changes", "path", w.Path, "branch", w.Branch, "changed_files", len(in.ChangedFiles))
		}
		s.mu.Lock()
		s.worktreeFinal = in
		s.mu.Unlock()
	}
}

// shutdown interrupts a running query and stops the process, leaving the
// state as it is (the pump makes a live session dormant).
func (s *Session) shutdown() {
	s.mu.Lock()
	p, t := s.proc, s.cur
	s.wakeParkedLocked()
	s.mu.Unlock()
	if p == nil {
		return
	}
	if t != nil {
		t.MarkInterrupted()
		ictx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = p.Interrupt(ictx)
		cancel()
	}
	s.stopProcess(p)
}

func (s *Session) stopProcess(p *claudeagent.Process) {
	if err := p.Close(); err != nil {
		s.log.Warn("stopping claude", "err", err)
	}
	s.mu.Lock()
	done := s.pumpDone
	s.mu.Unlock()
	if done != nil {
		<-done
	}
}

// idleSince reports whether s is idle and live, so that it can give its
// process up, and since when (the pool sees it through sessionHolder,
// for --max-live and --user-max-live).
func (s *Session) idleSince() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastUsed, s.st.State() == state.Idle && s.cur == nil && s.proc != nil
}

// makeDormant stops an idle session's process; the next query resumes it.
// It reports false when the session was busy (somebody owns it) or not
// live.
func (s *Session) makeDormant(reason string) bool {
	s.mu.Lock()
	p := s.proc
	if s.st.Owner() != state.Nobody || p == nil || s.st.State() != state.Idle {
		s.mu.Unlock()
		return false
	}
	s.st.SetOwnerLocked(state.Dormancy)
	s.mu.Unlock()
	s.log.Info("making session dormant", "reason", reason)
	s.stopProcess(p)
	s.st.Move(state.Dormant)
	s.st.Release()
	s.m.leaveMemory(s)
	return true
}

func (s *Session) stopIdleTimer() {
	s.mu.Lock()
	if s.idleTimer != nil {
		s.idleTimer.Stop()
	}
	s.mu.Unlock()
}

func (s *Session) resetIdleTimer() {
	d := s.m.cfg.IdleTimeout
	if d <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idleTimer != nil {
		s.idleTimer.Stop()
	}
	s.idleTimer = time.AfterFunc(d, func() { s.makeDormant("idle timeout") })
}
