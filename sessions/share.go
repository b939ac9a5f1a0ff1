package sessions

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// The manager's side of the registry, which other server instances may
// share: its sessions become records (store.Entry, store.Local) and
// records become sessions again; package store holds the file, the claims
// and the merge. Every write merges (share_sync.go); an instance asked for
// a session it does not hold looks it up in the store and adopts it as
// dormant (Manager.Get); a session's process runs on one instance at a
// time (share_fence.go). Reads (List, Get, the per-user quota) look at the
// store again when it changed since this instance last did, so that a
// session closed elsewhere is gone here too.

// shareState is what a manager keeps to share its registry with other
// instances.
type shareState struct {
	me           store.Claim   // this instance; Gen and Until are set at each write
	lease, renew time.Duration // a claim's lease, and how often claims are renewed

	// saveMu orders merges (one at a time, so that no cost is added twice)
	// and adoptions; lock order: saveMu, then Manager.mu, then Session.mu.
	saveMu sync.Mutex
	// Under saveMu: base is store.Merge.Base, lastSync the wall time of
	// the last merge.
	base     map[string]string
	lastSync time.Time

	// Under Manager.persistMu: what the next merge brings into the store.
	closed      []store.Closing    // sessions closed here
	unsaved     float64            // costs not yet added to the store's totals
	userUnsaved map[string]float64 // likewise per owner
	holding     bool               // the last merge left claims of this instance in the store

	// mu guards what follows; no other lock is taken under it.
	mu            sync.Mutex
	held          map[string]store.Held // this instance's claims, by session id
	seen          store.Stamp           // the store as this instance last read or wrote it
	fileOwner     map[string]string     // the open sessions in the store then: id → owner
	pendingClosed map[string]bool       // closed here, tombstone not yet written
	closedHere    []store.Closing       // the sessions closed here lately, oldest first (at most DefaultMaxTombstones)

	stopOnce sync.Once
	stop     chan struct{} // stops the renewal of claims
	done     chan struct{} // closed when the renewal has stopped
}

// startSharing names this instance and starts renewing its claims.
func (m *Manager) startSharing() {
	sh := &m.share
	host, _ := os.Hostname()
	pidns, _ := os.Readlink("/proc/self/ns/pid")
	sh.me = store.Claim{Instance: uuid.NewString(), Host: host, PIDNS: pidns, PID: os.Getpid()}
	sh.base, sh.lastSync = map[string]string{}, m.now().Round(0).UTC()
	sh.held = map[string]store.Held{}
	m.setLease()
	sh.stop, sh.done = make(chan struct{}), make(chan struct{})
	go m.renewClaims()
}

// stopSharing stops the renewal and writes the registry a last time, with
// the claims of the processes that have stopped released. Shutdown calls
// it once every process is gone.
func (m *Manager) stopSharing() {
	if m.store == nil {
		return
	}
	m.share.stopOnce.Do(func() {
		close(m.share.stop)
		<-m.share.done
	})
	m.persist()
}

// renewClaims writes the registry every renewal interval while this
// instance has claims in it, so that they stay valid.
func (m *Manager) renewClaims() {
	defer close(m.share.done)
	t := time.NewTicker(m.share.renew)
	defer t.Stop()
	for {
		select {
		case <-m.share.stop:
			return
		case <-t.C:
			m.persistMu.Lock()
			holding := m.share.holding
			m.persistMu.Unlock()
			if holding {
				m.persist()
			}
		}
	}
}

// shared reports whether the registry keeps the session: not a temporary
// one, nor a closed one.
func (s *Session) shared() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sharedLocked()
}

func (s *Session) sharedLocked() bool { return !s.opts.Temporary && s.state != StateClosed }

// local is the session as a merge sees it; ok is false for a session the
// registry does not keep.
func (s *Session) local() (l store.Local, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.sharedLocked() {
		return store.Local{}, false
	}
	live := s.proc != nil || s.state == StateStarting || s.state == StateQueued || s.state == StateRunning
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
	s.queries, s.cost, s.usage = e.Queries, e.CostUSD, Usage(e.Usage)
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
	h, err := loadTranscript(path)
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
	m.sync(nil)
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
	m.share.saveMu.Lock()
	_, known := m.share.base[s.ID]
	m.share.saveMu.Unlock()
	if !known {
		return nil
	}
	s.setState(StateStarting) // so that no merge meanwhile releases the claim
	return m.sync(s)
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
	sh := &m.share
	shared := m.store != nil && !temp
	sh.mu.Lock()
	sh.closedHere = append(sh.closedHere, n)
	if extra := len(sh.closedHere) - store.DefaultMaxTombstones; extra > 0 {
		sh.closedHere = slices.Delete(sh.closedHere, 0, extra)
	}
	if shared {
		if sh.pendingClosed == nil {
			sh.pendingClosed = map[string]bool{}
		}
		sh.pendingClosed[s.ID] = true
	}
	sh.mu.Unlock()
	if shared {
		m.persistMu.Lock()
		sh.closed = append(sh.closed, n)
		m.persistMu.Unlock()
	}
}

// PersistFailing reports whether sessions should survive a restart but do
// not: the last write of the registry failed.
func (m *Manager) PersistFailing() bool {
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	return m.persistErr != nil
}

// dropGone closes here the sessions another instance closed.
func (m *Manager) dropGone(gone []*Session) {
	for _, s := range gone {
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
}

// restore loads the registry's sessions as dormant sessions: at most
// MaxSessions of them, the most recently used. Each is checked against
// today's policy at once, so that one the policy refuses is listed as
// refused (it is checked again at each query).
func (m *Manager) restore() {
	if m.store == nil {
		return
	}
	m.startSharing()
	st, _, err := m.store.Read()
	if err != nil {
		m.log.Error("reading the session registry; starting without it", "path", m.cfg.Registry.Path(), "err", err)
		st = store.State{}
	}
	m.spent, m.userSpent = st.SpentUSD, maps.Clone(st.UserSpentUSD)
	entries := slices.DeleteFunc(st.Sessions, func(e store.Entry) bool { return e.SessionID == "" })
	slices.SortStableFunc(entries, func(a, b store.Entry) int { return b.LastUsed.Compare(a.LastUsed) })
	if n := len(entries) - m.cfg.MaxSessions; n > 0 {
		for _, e := range entries[m.cfg.MaxSessions:] {
			m.log.Warn("not restoring a session beyond --max-sessions; it stays in the registry (a query by its id takes it up once there is room) and its conversation on disk (continue it with resumeSessionId)",
				"session_id", e.SessionID, "claude_session_id", e.ClaudeSessionID, "max_sessions", m.cfg.MaxSessions)
		}
		entries = entries[:m.cfg.MaxSessions]
	}
	for _, e := range entries {
		s := m.restoreOne(e)
		m.sessions[s.ID] = s
		m.share.base[s.ID] = store.Key(e)
	}
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
		s.moveLocked(StateRefused)
		s.failure = err.Error()
		s.log.Warn("restored a session that the server's policy refuses to run", "reason", err)
	} else {
		s.moveLocked(StateDormant)
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
	sh := &m.share
	sh.saveMu.Lock()
	defer sh.saveMu.Unlock()
	m.mu.Lock()
	s, stopping := m.sessions[id], m.closed
	m.mu.Unlock()
	if s != nil {
		return s, nil
	}
	if stopping {
		return nil, NotFoundError(id)
	}
	st, _, err := m.store.Read()
	if err != nil {
		m.log.Warn("reading the session registry", "path", m.cfg.Registry.Path(), "err", err)
	}
	e, ok := st.Entry(id)
	if !ok {
		return nil, NotFoundError(id)
	}
	s = m.restoreOne(e)
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrShuttingDown
	}
	if n := len(m.sessions); n >= m.cfg.MaxSessions {
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: session %s is in the session registry, but %d sessions are open on this instance and --max-sessions is %d", ErrTooMany, id, n, m.cfg.MaxSessions)
	}
	if limit := m.cfg.UserMaxSessions; limit > 0 && e.Owner != "" {
		if n := m.userSessionsLocked(e.Owner, id); n >= limit {
			m.mu.Unlock()
			return nil, fmt.Errorf("%w: session %s is in the session registry, but user %s has %d other open sessions and this server allows a user %d (--user-max-sessions); close one first", ErrTooMany, id, e.Owner, n, limit)
		}
	}
	m.sessions[id] = s
	m.mu.Unlock()
	sh.base[id] = store.Key(e)
	s.log.Info("took up a session from the session registry as dormant (made or last run by another instance, or not restored at the start)", "claude_session_id", e.ClaudeSessionID)
	return s, nil
}
