package sessions

import (
	"slices"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// The manager's side of the registry, which other server instances may
// share (package sharing drives it through registryView; package store
// holds the file, the claims and the merge): its sessions become records
// (store.Entry, store.Local) and records become sessions again. Every
// write merges (sharing.Instance.Sync); an instance asked for a session it
// does not hold looks it up in the store and adopts it as dormant
// (Manager.Get); a session's process runs on one instance at a time
// (sharing.Instance.Fence). Reads (List, Get, the per-user quota) look at
// the store again when it changed since this instance last did, so that a
// session closed elsewhere is gone here too.

// registryView is the manager as one Sync, Look or Fence sees it
// (sharing.Host): the outcome acts on the sessions it made records of.
type registryView struct {
	m    *Manager
	byID map[string]*Session
}

// view is m for package sharing; s, if set, is the session a Fence checks.
func (m *Manager) view(s *Session) *registryView {
	v := &registryView{m: m, byID: map[string]*Session{}}
	if s != nil {
		v.byID[s.ID] = s
	}
	return v
}

func (v *registryView) Locals() []store.Local {
	var out []store.Local
	for _, s := range v.m.list() {
		if l, ok := s.local(); ok {
			out = append(out, l)
			v.byID[s.ID] = s
		}
	}
	return out
}

func (v *registryView) TakeOver(e store.Entry) bool {
	s := v.byID[e.SessionID]
	return s != nil && s.takeOver(e)
}

func (v *registryView) Drop(id string) { v.m.dropGone(v.byID[id]) }

func (v *registryView) FenceOff(id string, why error) { v.byID[id].fenceOff(why) }

// stopSharing stops the renewal of claims and writes the registry a last
// time, with the claims of the processes that have stopped released.
// Shutdown calls it once every process is gone.
func (m *Manager) stopSharing() {
	if m.store == nil {
		return
	}
	m.share.Stop()
	m.persist()
}

// sharedLocked reports whether the registry keeps the session: not a
// temporary one, nor a closed one. s.mu is held.
func (s *Session) sharedLocked() bool { return !s.opts.Temporary && s.st.State() != state.Closed }

// local is the session as a merge sees it; ok is false for a session the
// registry does not keep.
func (s *Session) local() (l store.Local, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.sharedLocked() {
		return store.Local{}, false
	}
	live := s.proc != nil || s.st.State() == state.Starting || s.st.State() == state.Queued || s.st.State() == state.Running
	return store.Local{Entry: s.entryLocked(), Live: live, Running: s.proc != nil}, true
}

// entryLocked is the session's registry entry; s.mu is held.
func (s *Session) entryLocked() store.Entry {
	return store.Entry{
		SessionID: s.ID, ClaudeSessionID: s.claudeSessionID, PastClaudeSessionIDs: slices.Clone(s.pastClaudeSessionIDs),
		Resumable: s.resumable, ForkPending: s.forkPending, Model: s.model,
		Created: s.created, LastUsed: s.lastUsed, Queries: s.queries, CostUSD: s.cost, Usage: store.Usage(s.usage),
		Options: s.opts, Worktree: s.worktree, Owner: s.opts.Owner, Operator: s.opts.Operator, AgentTool: s.opts.AgentTool,
		Grant: s.opts.Grant,
	}
}

// applyEntryLocked takes over what an entry records of the session; s.mu
// is held (or the session is not shared yet) and it has no process.
func (s *Session) applyEntryLocked(e store.Entry) {
	opts := e.Options
	opts.Owner, opts.Operator, opts.AgentTool, opts.Env, opts.Temporary = e.Owner, e.Operator, e.AgentTool, s.opts.Env, s.opts.Temporary
	opts.Grant = e.Grant
	s.opts = opts
	s.claudeSessionID, s.resumable, s.forkPending = e.ClaudeSessionID, e.Resumable, e.ForkPending
	s.pastClaudeSessionIDs = slices.Clone(e.PastClaudeSessionIDs)
	s.model, s.created, s.lastUsed = e.Model, e.Created, e.LastUsed
	s.queries, s.cost, s.usage = e.Queries, e.CostUSD, turn.Usage(e.Usage)
	s.worktree = e.Worktree
}

// takeOver takes over the record another instance wrote of the session,
// and reloads the history from its transcript; not while the session has
// a process (fenced off, and not stopped yet). It reports whether the
// stored record must win at the next merge too: the session had a process,
// or a turn whose failure is not recorded yet.
func (s *Session) takeOver(e store.Entry) (again bool) {
	s.mu.Lock()
	again = s.proc != nil || s.cur != nil
	if s.proc != nil {
		s.mu.Unlock()
		return again
	}
	s.applyEntryLocked(e)
	path := s.transcriptPath()
	s.mu.Unlock()
	h, err := history.Load(path)
	if err != nil {
		s.log.Warn("reading the transcript for the history", "path", path, "err", err)
	}
	s.mu.Lock()
	s.setHistoryLocked(h)
	s.mu.Unlock()
	return again
}

// setClaudeSessionIDLocked makes id the session's Claude session id; the
// one it replaces is kept among the past ones (a conversation the session
// made). s.mu is held.
func (s *Session) setClaudeSessionIDLocked(id string) {
	if old := s.claudeSessionID; old != "" && old != id && !slices.Contains(s.pastClaudeSessionIDs, old) {
		s.pastClaudeSessionIDs = append(s.pastClaudeSessionIDs, old)
	}
	s.claudeSessionID = id
}

// persist writes the registry, if any, merging with what other instances
// wrote (see sync). Call it without holding any session's lock.
func (m *Manager) persist() {
	if m.store == nil {
		return
	}
	_ = m.share.Sync(m.view(nil), "")
}

// claimInRegistry claims s in the registry before its process starts: it fails with
// ErrElsewhere while another live instance runs s, and with ErrClosed when
// another instance closed it; otherwise s takes over what other instances
// recorded of it since (their turns, a new Claude session id). A session
// the registry never held needs no claim, and an unwritable registry does
// not keep a session from running (it is reported as not persisted).
func (m *Manager) claimInRegistry(s *Session) error {
	if m.store == nil {
		return nil
	}
	if !m.share.Known(s.ID) {
		return nil
	}
	s.st.Move(state.Starting) // so that no merge meanwhile releases the claim
	return m.share.Sync(m.view(s), s.ID)
}

// released notes that s's process ended: the registry is written so that
// another instance may run s now. At shutdown, stopSharing writes once for
// all.
func (m *Manager) released(s *Session) {
	if m.store == nil || m.shuttingDown() {
		return
	}
	s.mu.Lock()
	temp := s.opts.Temporary
	s.mu.Unlock()
	if !temp {
		m.persist()
	}
}

// noteClosed records that s was closed here: for ConversationOwner, and,
// with a registry, as a tombstone written with the next merge.
func (m *Manager) noteClosed(s *Session) {
	s.mu.Lock()
	n := store.Closing{ID: s.ID, Owner: s.opts.Owner, ClaudeSessionIDs: append(slices.Clone(s.pastClaudeSessionIDs), s.claudeSessionID)}
	temp := s.opts.Temporary
	s.mu.Unlock()
	if temp {
		m.share.ClosedTemporary(n)
	} else {
		m.share.Closed(n)
	}
}

// PersistFailing reports whether sessions should survive a restart but do
// not: the last write of the registry failed.
func (m *Manager) PersistFailing() bool { return m.share.Failing() }

// dropGone closes here s, which another instance closed.
func (m *Manager) dropGone(s *Session) {
	m.mu.Lock()
	if m.sessions[s.ID] == s {
		delete(m.sessions, s.ID)
	}
	m.mu.Unlock()
	s.mu.Lock()
	s.worktree = nil // the instance that closed it dealt with its worktree
	s.mu.Unlock()
	s.log.Info("closed on another instance sharing the session registry")
	s.close()
}

// restore loads the registry's sessions as dormant sessions: at most
// MaxSessions of them, the most recently used. Each is checked against
// today's policy at once, so that one the policy refuses is listed as
// refused (it is checked again at each query).
func (m *Manager) restore() {
	if m.store == nil {
		return
	}
	m.share.Start(m.persist)
	m.share.Restore(m.cfg.MaxSessions, func(e store.Entry) {
		s := m.restoreOne(e)
		m.sessions[s.ID] = s
	})
	if n := len(m.sessions); n > 0 {
		m.log.Info("restored sessions from the registry as dormant", "count", n, "path", m.cfg.Registry.Path())
	}
}

// restoreOne makes a dormant session of a registry entry, refused when
// today's policy does not let it run.
func (m *Manager) restoreOne(e store.Entry) *Session {
	e.Options.Owner, e.Options.Operator, e.Options.AgentTool, e.Options.Grant = e.Owner, e.Operator, e.AgentTool, e.Grant
	s := newSession(m, e.Options) // not shared yet: no lock needed below
	s.ID = e.SessionID
	s.log = m.log.With("session_id", s.ID)
	s.applyEntryLocked(e)
	if _, err := m.admit(&s.opts); err != nil {
		s.st.MoveLocked(state.Refused)
		s.failure = err.Error()
		s.log.Warn("restored a session that the server's policy refuses to run", "reason", err)
	} else {
		s.st.MoveLocked(state.Dormant)
	}
	s.loadHistory()
	return s
}

// adopt takes up a session this instance does not hold from the registry,
// as dormant (refused when today's policy does not let it run): one another
// instance sharing the registry made, or one beyond --max-sessions at the
// start. It fails with the not-found error when the registry has no such
// open session, and with ErrTooMany beyond --max-sessions or the owner's
// --user-max-sessions, as a create would.
func (m *Manager) adopt(id string) (*Session, error) {
	if m.store == nil || id == "" {
		return nil, NotFoundError(id)
	}
	var s *Session
	adopted := ""
	err := m.share.Adopt(func(read func() store.State) (*store.Entry, error) {
		m.mu.Lock()
		held, stopping := m.sessions[id], m.closed
		m.mu.Unlock()
		switch {
		case held != nil:
			s = held
			return nil, nil
		case stopping:
			return nil, NotFoundError(id)
		}
		st := read()
		e, ok := st.Entry(id)
		if !ok {
			return nil, NotFoundError(id)
		}
		s = m.restoreOne(e)
		if err := m.admitAdopted(s, e); err != nil {
			return nil, err
		}
		adopted = e.ClaudeSessionID
		return &e, nil
	})
	if err != nil {
		return nil, err
	}
	if adopted != "" {
		s.log.Info("took up a session from the session registry as dormant (made or last run by another instance, or not restored at the start)", "claude_session_id", adopted)
	}
	return s, nil
}

// admitAdopted registers s, made of the registry's entry e, unless the
// manager is shutting down or it is beyond --max-sessions or its owner's
// --user-max-sessions.
func (m *Manager) admitAdopted(s *Session, e store.Entry) error {
	id := e.SessionID
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrShuttingDown
	}
	if err := m.quota.CheckOpen(len(m.sessions), e.Owner, func() int { return m.userSessionsLocked(e.Owner, id) }, id); err != nil {
		return err
	}
	m.sessions[id] = s
	return nil
}

// now is the manager's clock: time.Now, or the tests' clock.
func (m *Manager) now() time.Time {
	if m.cfg.now != nil {
		return m.cfg.now()
	}
	return time.Now()
}

// refresh looks at the registry again when it changed since this instance
// last read or wrote it (see sharing.Instance.Look): sessions closed on
// another instance are closed here too, and the open sessions of other
// instances are counted for the per-user quota. Call it without holding
// any lock.
func (m *Manager) refresh() { m.share.Look(m.view(nil)) }

// fence makes sure that s's process, which runs here, may still be used
// before anything is sent to it (see sharing.Instance.Fence): the claim on
// s may have passed to another instance. Call it without holding any
// lock.
func (m *Manager) fence(s *Session) error {
	if m.store == nil {
		return nil
	}
	return m.share.Fence(m.view(s), s.ID)
}

// fenceOff kills the session's process, whose claim passed to another instance, and
// fails its running turn with why. Nothing more reaches the process: it is
// killed, not stopped gracefully, so that it writes nothing more to the
// conversation's transcript, which the other instance now continues.
func (s *Session) fenceOff(why error) {
	s.mu.Lock()
	p, t, done := s.proc, s.cur, s.pumpDone
	s.mu.Unlock()
	if p == nil {
		return
	}
	s.log.Error("another instance sharing the session registry took the session over while this instance's claim had lapsed; killing its claude process here",
		"pid", p.PID(), "err", why)
	if t != nil {
		t.Fail(why.Error())
	}
	p.Kill()
	if done != nil {
		<-done
	}
}

// userSessionsLocked counts the open sessions of owner, each once, except
// the session except: this instance's (temporary and unsaved ones
// included) and those the registry held at this instance's last look
// (other instances'), less those closed here whose tombstone is not
// written yet. m.mu is held; call refresh before for a current count.
func (m *Manager) userSessionsLocked(owner, except string) int {
	ids := map[string]bool{}
	for id, s := range m.sessions {
		s.mu.Lock()
		if id != except && s.opts.Owner == owner && s.st.State() != state.Closed {
			ids[id] = true
		}
		s.mu.Unlock()
	}
	m.share.CountOwned(owner, except, ids)
	return len(ids)
}

// ConversationOwner reports who made the Claude conversation id (a
// claudeSessionId): the owner of the session of this instance that has or
// had it, else of a session closed here lately, else what the registry
// knows (see store.State.ConversationOwner). "" is a session made over
// stdio; known is false when no session with that conversation is known.
func (m *Manager) ConversationOwner(id string) (owner string, known bool) {
	if id == "" {
		return "", false
	}
	for _, s := range m.list() {
		s.mu.Lock()
		has := s.claudeSessionID == id || slices.Contains(s.pastClaudeSessionIDs, id)
		owner := s.opts.Owner
		s.mu.Unlock()
		if has {
			return owner, true
		}
	}
	return m.share.ConversationOwner(id)
}
