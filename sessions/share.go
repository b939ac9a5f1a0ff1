package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/registryfile"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// The manager's side of the session store (Config.Store, package store,
// through fleet), which other instances may share: one record per
// session, created with the quotas counted (register), written alone
// (persist) under the session's lease, which its process starts under
// (claimLease) and gives up at its end (released: a dormant session then
// leaves memory; Get loads it again). Without a store, memory only.

// storeHost is the manager as the store's changes and the leases reach it.
type storeHost struct{ m *Manager }

func (h storeHost) held(id string) *Session {
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	return h.m.sessions[id]
}

func (h storeHost) Drop(id string) {
	if s := h.held(id); s != nil {
		h.m.dropGone(s)
	}
}

func (h storeHost) FenceOff(id string, why error) {
	if s := h.held(id); s != nil {
		s.fenceOff(why)
	}
}

func (h storeHost) Held() (ids []string) {
	for _, s := range h.m.list() {
		ids = append(ids, s.ID)
	}
	return ids
}

// recordLocked is the session's record in the store; s.mu is held.
func (s *Session) recordLocked() store.Record {
	st := s.st.State()
	if st == state.Starting || st == state.Queued || st == state.Running || st == state.Interrupting {
		st = state.Idle
	}
	return store.Record{Entry: s.entryLocked(), State: st, Temporary: s.opts.Temporary}
}

// entryLocked is the session's stored record; s.mu is held.
func (s *Session) entryLocked() registryfile.Entry {
	return registryfile.Entry{
		SessionID: s.ID, ClaudeSessionID: s.claudeSessionID, PastClaudeSessionIDs: slices.Clone(s.pastClaudeSessionIDs),
		Resumable: s.resumable, ForkPending: s.forkPending, Model: s.model,
		Created: s.created, LastUsed: s.lastUsed, Queries: s.queries, CostUSD: s.cost, Usage: registryfile.Usage(s.usage),
		Options: s.opts, Worktree: s.worktree, Owner: s.opts.Owner, Operator: s.opts.Operator, AgentTool: s.opts.AgentTool,
		Grant: s.opts.Grant, LastMessage: s.lastMessage,
	}
}

// applyEntryLocked takes over what an entry records of the session; s.mu
// is held (or the session is not shared yet) and it has no process.
func (s *Session) applyEntryLocked(e registryfile.Entry) {
	opts := e.Options
	opts.Owner, opts.Operator, opts.AgentTool, opts.Env, opts.Temporary = e.Owner, e.Operator, e.AgentTool, s.opts.Env, s.opts.Temporary
	opts.Grant = e.Grant
	s.opts = opts
	s.claudeSessionID, s.resumable, s.forkPending = e.ClaudeSessionID, e.Resumable, e.ForkPending
	s.pastClaudeSessionIDs = slices.Clone(e.PastClaudeSessionIDs)
	s.model, s.created, s.lastUsed = e.Model, e.Created, e.LastUsed
	s.queries, s.cost, s.usage = e.Queries, e.CostUSD, turn.Usage(e.Usage)
	s.worktree, s.lastMessage = e.Worktree, e.LastMessage
}

// takeOver takes over the record another instance wrote of the session
// since (not while it has a process), and reloads the history.
func (s *Session) takeOver(e registryfile.Entry) {
	s.mu.Lock()
	if s.proc != nil || (e.Queries == s.queries && e.ClaudeSessionID == s.claudeSessionID) {
		s.mu.Unlock()
		return
	}
	s.applyEntryLocked(e)
	s.mu.Unlock()
	s.loadHistory()
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

// save is a write of a session's record (saves, package saver): spent is
// a turn's cost to add to the sums; transcript asks for the transcript's
// new bytes too.
type save struct {
	spent      float64
	transcript bool
}

func mergeSaves(a, b save) save { return save{a.spent + b.spent, a.transcript || b.transcript} }

// persist writes s's record, and the transcript's new bytes with
// saveTranscript, after the writes queued before it (a turn's cost goes
// through persistTurn). Hold no lock.
func (m *Manager) persist(s *Session, saveTranscript bool) {
	s.saves.Now(save{transcript: saveTranscript})
}

// persistTurn writes what a turn that ended changed of s (its history's
// new entries, then its record with its cost) before the answer goes to
// its caller, so that no answer a caller has seen is missing from the
// store; the transcript follows, as the CLI writes it (followTranscript,
// durable.go). Until the write, the cost is counted as owed (Spent,
// UserSpent see it). Hold no lock.
func (m *Manager) persistTurn(s *Session, spent float64) {
	if !m.share.Stored() {
		m.write(s, save{spent, true})
		return
	}
	s.mu.Lock()
	owner := s.opts.Owner
	s.mu.Unlock()
	m.share.Owe(owner, spent)
	s.saves.Now(save{spent, true})
}

// write is one write of s's record (see persist): the history's new
// entries first, then the record, whose LastMessage marks the turn stored;
// with transcript, the transcript follows in the background.
func (m *Manager) write(s *Session, w save) {
	spent := w.spent
	s.mu.Lock()
	closed := s.st.State() == state.Closed
	rec := s.recordLocked()
	s.mu.Unlock()
	ctx := context.Background()
	defer m.share.Owe(rec.Owner, -spent) // what persistTurn counted as owed: written now, or never
	if closed && m.share.Stored() {
		return
	}
	err := m.storeHistory(ctx, s)
	if err == nil {
		err = m.share.Put(ctx, rec, spent)
	}
	if errors.Is(err, store.ErrElsewhere) || errors.Is(err, store.ErrFenced) {
		go s.fenceOff(err) // persist may run on the pump, which fenceOff waits for
		return
	}
	if w.transcript && err == nil {
		m.followTranscript(s)
	}
}

// claimLease takes s's lease before its process starts (ErrElsewhere while
// another instance runs s, ErrClosed when one closed it); s takes over what
// others recorded of it since, and its conversation is made whole for the
// CLI (wholeConversation, durable.go).
func (m *Manager) claimLease(ctx context.Context, s *Session) error {
	if !m.share.Stored() {
		return nil
	}
	m.mu.Lock()
	if m.sessions[s.ID] == nil && !m.closed { // left memory dormant, used again
		m.sessions[s.ID] = s
	}
	held := m.sessions[s.ID]
	m.mu.Unlock()
	if held != s {
		return fmt.Errorf("%w: session %s was loaded again meanwhile: get it again", ErrClosed, s.ID)
	}
	if err := m.share.Acquire(ctx, s.ID, storeHost{m}); err != nil {
		return err
	}
	if rec, err := m.share.Get(ctx, s.ID); err == nil {
		s.takeOver(rec.Entry)
	}
	m.wholeConversation(ctx, s)
	return nil
}

// released notes that s's process ended: its record and transcript are
// written, its lease released.
func (m *Manager) released(s *Session) {
	if !m.share.Stored() {
		return
	}
	m.persist(s, false)
	m.saveTranscript(s) // the CLI has ended: its transcript is whole
	m.share.Release(s.ID)
	m.leaveMemory(s)
}

// leaveMemory drops s, dormant with its record written, from memory.
func (m *Manager) leaveMemory(s *Session) {
	s.mu.Lock()
	idle := m.share.Stored() && s.st.State() == state.Dormant && s.st.Owner() == state.Nobody && s.textFollowers == 0 && !s.opts.Temporary
	s.mu.Unlock()
	if idle && s.CurrentRun() == nil {
		m.unhold(s)
	}
}

// unhold drops s from the sessions held here, unless another copy of it
// is held.
func (m *Manager) unhold(s *Session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions[s.ID] == s {
		delete(m.sessions, s.ID)
	}
}

// PersistFailing reports whether sessions should survive a restart but do
// not: the last write of the store failed.
func (m *Manager) PersistFailing() bool { return m.cfg.StoreFailed || m.share.Failing() }

// dropGone closes here s, which another instance closed.
func (m *Manager) dropGone(s *Session) {
	m.unhold(s)
	s.mu.Lock()
	s.worktree = nil // the instance that closed it dealt with its worktree
	s.mu.Unlock()
	s.log.Info("closed on another instance sharing the session store")
	s.close()
}

// load takes up a session this instance does not hold from the store.
func (m *Manager) load(id string) (*Session, error) {
	if !m.share.Stored() || id == "" {
		return nil, NotFoundError(id)
	}
	rec, err := m.share.Get(context.Background(), id)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrClosed):
		return nil, NotFoundError(id)
	case err != nil:
		return nil, fmt.Errorf("reading session %s from the session store: %w", id, err)
	}
	s := m.restoreOne(rec)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrShuttingDown
	}
	if held := m.sessions[id]; held != nil {
		return held, nil
	}
	m.sessions[id] = s
	return s, nil
}

// restoreOne makes a dormant session of a stored record, refused when
// today's policy does not let it run or its cwd is not on this machine.
func (m *Manager) restoreOne(rec store.Record) *Session {
	e := rec.Entry
	e.Options.Owner, e.Options.Operator, e.Options.AgentTool, e.Options.Grant = e.Owner, e.Operator, e.AgentTool, e.Grant
	e.Options.Temporary = rec.Temporary
	s := newSession(m, e.Options) // not shared yet: no lock needed below
	s.ID = e.SessionID
	s.log = m.log.With("session_id", s.ID)
	s.applyEntryLocked(e)
	_, err := m.admit(&s.opts)
	if cwd := s.cwdLocked(); err == nil && cwd != "" {
		if _, serr := os.Stat(cwd); serr != nil {
			err = fmt.Errorf("its working directory %s does not exist on this machine (%v); run it on the machine that has it", cwd, serr)
		}
	}
	if err != nil {
		s.st.MoveLocked(state.Refused)
		s.failure = err.Error()
		s.log.Warn("a stored session that this server cannot run", "reason", err)
	} else {
		s.st.MoveLocked(state.Dormant)
	}
	s.loadHistory()
	return s
}

// fence checks that s's lease is still this instance's before anything is
// sent to its process. Hold no lock.
func (m *Manager) fence(s *Session) error { return m.share.Fence(s.ID, storeHost{m}) }

// fenceOff kills the session's process, whose lease passed to another
// instance (so it writes nothing more to the transcript the other one
// continues), and fails its running turn with why.
func (s *Session) fenceOff(why error) {
	s.mu.Lock()
	p, t, done := s.proc, s.cur, s.pumpDone
	s.mu.Unlock()
	if p == nil {
		return
	}
	s.log.Error("another instance sharing the session store took the session over while this instance's lease had lapsed; killing its claude process here",
		"pid", p.PID(), "err", why)
	if t != nil {
		t.Fail(why.Error())
	}
	p.Kill()
	if done != nil {
		<-done
	}
}

// ConversationOwner reports who made the Claude conversation id (a
// claudeSessionId) as the sessions held here, then the store, know; ""
// is a session made over stdio.
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

// register makes s one of the open sessions: with a store, its record is
// created within the session caps counted in the same transaction.
func (m *Manager) register(ctx context.Context, s *Session) error {
	owner := s.opts.Owner
	if m.share.Stored() {
		q := store.Quota{MaxSessions: m.cfg.MaxSessions}
		if owner != "" {
			q.UserMaxSessions = m.cfg.UserMaxSessions
		}
		s.mu.Lock()
		rec := s.recordLocked()
		s.mu.Unlock()
		var qe *store.QuotaError
		err := m.share.Create(ctx, rec, q)
		switch {
		case errors.As(err, &qe) && qe.What == "sessions":
			return m.quota.CheckOpen(int(qe.Have), "", nil, "")
		case errors.As(err, &qe):
			return m.quota.CheckOpen(0, owner, func() int { return int(qe.Have) }, "")
		case err != nil:
			s.log.Warn("storing the new session: it will not survive a restart", "err", err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrShuttingDown
	}
	if !m.share.Stored() {
		if err := m.quota.CheckOpen(len(m.sessions), owner, func() int { return m.userSessionsLocked(owner) }, ""); err != nil {
			return err
		}
	}
	m.sessions[s.ID] = s
	return nil
}

// userSessionsLocked counts owner's open sessions held here; m.mu is held.
func (m *Manager) userSessionsLocked(owner string) int {
	n := 0
	for _, s := range m.sessions {
		s.mu.Lock()
		if s.opts.Owner == owner && s.st.State() != state.Closed {
			n++
		}
		s.mu.Unlock()
	}
	return n
}
