package sessions

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Sharing the registry between server instances. Every write merges,
// under the registry's lock file, with what the others wrote. Per session
// the record changed since this instance last synced it wins (the most
// recently used one when both changed); a closed session leaves a
// tombstone so that no instance brings it back; costs are added as what
// this instance spent since its last write. An instance asked for a
// session it does not hold looks it up in the file and adopts it as
// dormant (Manager.Get); a session's process runs on one instance at a
// time (see registry_fence.go). Reads (List, Get, the per-user quota) look
// at the file again when it changed since this instance last did (a stat),
// so that a session closed elsewhere is gone here too.

// shareState is what a manager keeps to share its registry with other
// instances.
type shareState struct {
	me           registryClaim // this instance; Gen and Until are set at each write
	lease, renew time.Duration // a claim's lease, and how often claims are renewed

	// saveMu orders merges (one at a time, so that no cost is added twice)
	// and adoptions; lock order: saveMu, then Manager.mu, then Session.mu.
	saveMu sync.Mutex
	// Under saveMu: base is, per session this instance holds, its entry as
	// this instance last read it from the file or wrote it (JSON): what
	// tells a change made here from one made by another instance (lostBase:
	// the file's wins). lastSync is the wall time of the last merge.
	base     map[string]string
	lastSync time.Time

	// Under Manager.persistMu: what the next merge brings into the file.
	closed      []closedNote       // sessions closed here
	unsaved     float64            // costs not yet added to the file's totals
	userUnsaved map[string]float64 // likewise per owner
	holding     bool               // the last merge left claims of this instance in the file

	// mu guards what follows; no other lock is taken under it.
	mu            sync.Mutex
	held          map[string]heldClaim // this instance's claims, by session id
	seen          os.FileInfo          // the registry file as this instance last read or wrote it
	fileOwner     map[string]string    // the open sessions in the file then: id → owner
	pendingClosed map[string]bool      // closed here, tombstone not yet written
	closedHere    []closedNote         // the sessions closed here lately, oldest first (at most maxTombstones)

	stopOnce sync.Once
	stop     chan struct{} // stops the renewal of claims
	done     chan struct{} // closed when the renewal has stopped
}

// closedNote is a session closed here, as its tombstone records it.
type closedNote struct {
	id    string
	owner string
	ids   []string // the Claude session ids it had
}

// startSharing names this instance and starts renewing its claims.
func (m *Manager) startSharing() {
	sh := &m.share
	host, _ := os.Hostname()
	pidns, _ := os.Readlink("/proc/self/ns/pid")
	sh.me = registryClaim{Instance: uuid.NewString(), Host: host, PIDNS: pidns, PID: os.Getpid()}
	sh.base, sh.lastSync = map[string]string{}, m.now().Round(0).UTC()
	sh.held = map[string]heldClaim{}
	m.setLease()
	sh.stop, sh.done = make(chan struct{}), make(chan struct{})
	go m.renewClaims()
}

// stopSharing stops the renewal and writes the registry a last time, with
// the claims of the processes that have stopped released. Shutdown calls
// it once every process is gone.
func (m *Manager) stopSharing() {
	if m.cfg.Registry == nil {
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

// entryLocked is the session's registry entry; s.mu is held.
func (s *Session) entryLocked() RegistryEntry {
	return RegistryEntry{
		SessionID: s.ID, ClaudeSessionID: s.claudeSessionID, PastClaudeSessionIDs: slices.Clone(s.pastClaudeSessionIDs),
		Resumable: s.resumable, ForkPending: s.forkPending, Model: s.model,
		Created: s.created, LastUsed: s.lastUsed, Queries: s.queries, CostUSD: s.cost, Usage: s.usage,
		Options: s.opts, Worktree: s.worktree, Owner: s.opts.Owner, Operator: s.opts.Operator, AgentTool: s.opts.AgentTool,
	}
}

// applyEntryLocked takes over what another instance recorded of the
// session; s.mu is held and the session has no process.
func (s *Session) applyEntryLocked(e RegistryEntry) {
	opts := e.Options
	opts.Owner, opts.Operator, opts.AgentTool, opts.Env, opts.Temporary = e.Owner, e.Operator, e.AgentTool, s.opts.Env, s.opts.Temporary
	s.opts = opts
	s.claudeSessionID, s.resumable, s.forkPending = e.ClaudeSessionID, e.Resumable, e.ForkPending
	s.pastClaudeSessionIDs = slices.Clone(e.PastClaudeSessionIDs)
	s.model, s.created, s.lastUsed = e.Model, e.Created, e.LastUsed
	s.queries, s.cost, s.usage = e.Queries, e.CostUSD, e.Usage
	s.worktree = e.Worktree
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

// entryKey is an entry as JSON, to compare.
func entryKey(e RegistryEntry) string {
	b, _ := json.Marshal(e)
	return string(b)
}

// persist writes the registry, if any, merging with what other instances
// wrote (see sync). Call it without holding any session's lock.
func (m *Manager) persist() {
	if m.cfg.Registry == nil {
		return
	}
	m.sync(nil)
}

// claim claims s in the registry before its process starts: it fails with
// ErrElsewhere while another live instance runs s, and with ErrClosed when
// another instance closed it; otherwise s takes over what other instances
// recorded of it since (their turns, a new Claude session id). A session
// the registry never held needs no claim, and an unwritable registry does
// not keep a session from running (it is reported as not persisted).
func (m *Manager) claim(s *Session) error {
	if m.cfg.Registry == nil {
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
	if m.cfg.Registry == nil || m.shuttingDown() {
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
	n := closedNote{id: s.ID, owner: s.opts.Owner, ids: append(slices.Clone(s.pastClaudeSessionIDs), s.claudeSessionID)}
	temp := s.opts.Temporary
	s.mu.Unlock()
	sh := &m.share
	shared := m.cfg.Registry != nil && !temp
	sh.mu.Lock()
	sh.closedHere = append(sh.closedHere, n)
	if extra := len(sh.closedHere) - maxTombstones; extra > 0 {
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

// closedElsewhere reports whether the file says that the session id, which
// this instance holds, was closed: it has a tombstone, or it is missing
// and its tombstone may have been dropped since this instance last synced
// (ClosedHorizon). saveMu is held.
func (sh *shareState) closedElsewhere(f *registryFile, id string, inFile bool) bool {
	if _, ok := f.Closed[id]; ok {
		return true
	}
	_, synced := sh.base[id]
	return !inFile && synced && f.ClosedHorizon.After(sh.lastSync)
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

// openOwners maps the open sessions of f to their owners.
func openOwners(f *registryFile) map[string]string {
	out := make(map[string]string, len(f.Sessions))
	for _, e := range f.Sessions {
		out[e.SessionID] = e.Owner
	}
	return out
}

// restore loads the registry's sessions as dormant sessions: at most
// MaxSessions of them, the most recently used. Each is checked against
// today's policy at once, so that one the policy refuses is listed as
// refused (it is checked again at each query).
func (m *Manager) restore() {
	if m.cfg.Registry == nil {
		return
	}
	m.startSharing()
	entries := m.cfg.Registry.Load()
	m.spent, m.userSpent = m.cfg.Registry.SpentUSD()
	m.userSpent = maps.Clone(m.userSpent)
	entries = slices.DeleteFunc(entries, func(e RegistryEntry) bool { return e.SessionID == "" })
	slices.SortStableFunc(entries, func(a, b RegistryEntry) int { return b.LastUsed.Compare(a.LastUsed) })
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
		m.share.base[s.ID] = entryKey(e)
	}
	if n := len(m.sessions); n > 0 {
		m.log.Info("restored sessions from the registry as dormant", "count", n, "path", m.cfg.Registry.Path())
	}
}

// restoreOne makes a dormant session of a registry entry, refused when
// today's policy does not let it run.
func (m *Manager) restoreOne(e RegistryEntry) *Session {
	e.Options.Owner, e.Options.Operator, e.Options.AgentTool = e.Owner, e.Operator, e.AgentTool
	s := newSession(m, e.Options)
	s.ID = e.SessionID
	s.log = m.log.With("session_id", s.ID)
	s.claudeSessionID, s.resumable, s.forkPending = e.ClaudeSessionID, e.Resumable, e.ForkPending
	s.pastClaudeSessionIDs = slices.Clone(e.PastClaudeSessionIDs)
	s.model, s.created, s.lastUsed = e.Model, e.Created, e.LastUsed
	s.queries, s.cost, s.usage = e.Queries, e.CostUSD, e.Usage
	s.worktree = e.Worktree
	s.state = StateDormant
	if _, err := m.admit(&s.opts); err != nil {
		s.state, s.failure = StateRefused, err.Error()
		s.log.Warn("restored a session that the server's policy refuses to run", "reason", err)
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
	if m.cfg.Registry == nil || id == "" {
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
	e, ok := m.cfg.Registry.lookup(id)
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
	sh.base[id] = entryKey(e)
	s.log.Info("took up a session from the session registry as dormant (made or last run by another instance, or not restored at the start)", "claude_session_id", e.ClaudeSessionID)
	return s, nil
}
