package sessions

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// sync merges this instance's sessions into the registry under its lock
// (see store.Merge for who wins): it makes records of the sessions
// (mergeInput), merges them in the store, and brings the outcome back
// (recordMerge, then takeOver for the records that won, dropGone for the
// sessions another instance closed, fenceOff for those whose claim passed
// to another instance). With claim set, s is claimed for a start (see
// Manager.claimInRegistry), or, when its process runs, its claim is confirmed (see
// fence); the error says why it may not start or go on. Write errors are
// reported through PersistFailing.
func (m *Manager) sync(claim *Session) error {
	sh := &m.share
	sh.saveMu.Lock()
	in, byID := m.mergeInput(claim)
	var out store.Merged
	var at time.Time // when the claims were written, on this instance's clock
	stamp, err := m.store.Update(func(st *store.State, _ time.Time) {
		at = m.now()
		out = in.Apply(st, at)
	})
	was := m.recordMerge(in, out, stamp, at, err)
	if err == nil {
		for _, e := range out.Take {
			if s := byID[e.SessionID]; s != nil && s.takeOver(e) {
				sh.base[s.ID] = store.LostBase
			}
		}
	}
	sh.saveMu.Unlock()

	switch {
	case err != nil && was == nil:
		m.log.Error("saving the session registry: sessions will not survive a restart until it can be written", "err", err)
	case err == nil && was != nil:
		m.log.Info("the session registry is written again")
	}
	var gone []*Session
	for _, id := range out.Gone {
		gone = append(gone, byID[id])
	}
	m.dropGone(gone)
	for id, why := range out.Lost {
		m.fenceOff(byID[id], why)
	}
	switch {
	case out.ClaimClosed:
		return fmt.Errorf("%w: session %s was closed on another claude-agent-mcp instance sharing this server's session registry", ErrClosed, claim.ID)
	case out.ClaimErr != nil:
		return out.ClaimErr
	}
	return nil
}

// mergeInput is what this instance brings to a merge: its sessions as
// records (byID maps them back), what it closed and spent since the last
// merge, and what it knows of its claims. saveMu is held.
func (m *Manager) mergeInput(claim *Session) (*store.Merge, map[string]*Session) {
	sh := &m.share
	in := &store.Merge{Me: sh.me, Lease: sh.lease, Base: sh.base, LastSync: sh.lastSync}
	byID := map[string]*Session{}
	for _, s := range m.list() {
		if l, ok := s.local(); ok {
			in.Sessions = append(in.Sessions, l)
			byID[s.ID] = s
		}
	}
	if claim != nil {
		in.Claim = claim.ID
	}
	m.persistMu.Lock()
	in.Closed = slices.Clone(sh.closed)
	in.SpentUSD, in.UserSpentUSD = sh.unsaved, maps.Clone(sh.userUnsaved)
	m.persistMu.Unlock()
	sh.mu.Lock()
	in.Held = maps.Clone(sh.held)
	sh.mu.Unlock()
	return in, byID
}

// recordMerge brings the outcome of a merge into the manager: the claims
// it lost (also when the write failed), and, when it was written, the
// costs (what was written is in the store's totals now; what came since
// waits for the next merge), the claims held, the base of each session,
// the tombstones written. It returns the error of the previous write.
// saveMu is held.
func (m *Manager) recordMerge(in *store.Merge, out store.Merged, stamp store.Stamp, at time.Time, err error) (was error) {
	sh := &m.share
	sh.mu.Lock()
	for id, why := range out.Lost {
		sh.held[id] = store.Held{Lost: why} // until this instance claims it again
	}
	sh.mu.Unlock()

	m.persistMu.Lock()
	was = m.persistErr
	m.persistErr = err
	if err == nil {
		sh.closed = sh.closed[len(in.Closed):]
		sh.unsaved -= in.SpentUSD
		m.spent = out.SpentUSD + sh.unsaved
		for u, v := range in.UserSpentUSD {
			sh.userUnsaved[u] -= v
		}
		m.userSpent = out.UserSpentUSD
		for u, v := range sh.userUnsaved {
			if v != 0 {
				if m.userSpent == nil {
					m.userSpent = map[string]float64{}
				}
				m.userSpent[u] += v
			}
		}
		sh.holding = out.Holding
	}
	m.persistMu.Unlock()
	if err != nil {
		return was
	}
	sh.base, sh.lastSync = out.Base, at.Round(0).UTC()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	held := map[string]store.Held{}
	for _, l := range in.Sessions {
		id := l.Entry.SessionID
		if g, ok := out.Claimed[id]; ok {
			held[id] = store.Held{Gen: g, Confirmed: at}
		} else if h := sh.held[id]; h.Lost != nil && !slices.Contains(out.Gone, id) {
			held[id] = h // until this instance claims it again
		}
	}
	sh.held = held
	sh.seen, sh.fileOwner = stamp, out.Owners
	for _, n := range in.Closed {
		delete(sh.pendingClosed, n.ID)
	}
	return was
}

// refresh looks at the registry again when it changed since this instance
// last read or wrote it (a stat when it did not): sessions closed on
// another instance are closed here too, and the open sessions of other
// instances are counted for the per-user quota. Call it without holding
// any lock.
func (m *Manager) refresh() {
	if m.store == nil {
		return
	}
	sh := &m.share
	sh.mu.Lock()
	seen := sh.seen
	sh.mu.Unlock()
	if !m.store.Changed(seen) {
		return
	}
	sh.saveMu.Lock()
	st, stamp, err := m.store.Read()
	if err != nil {
		sh.saveMu.Unlock()
		return // the next merge reports it
	}
	inFile := map[string]bool{}
	for _, e := range st.Sessions {
		inFile[e.SessionID] = true
	}
	var gone []*Session
	for _, s := range m.list() {
		if !s.shared() {
			continue
		}
		if _, synced := sh.base[s.ID]; st.ClosedElsewhere(s.ID, inFile[s.ID], synced, sh.lastSync) {
			gone = append(gone, s)
		}
	}
	sh.mu.Lock()
	sh.seen, sh.fileOwner = stamp, st.Owners()
	sh.mu.Unlock()
	sh.saveMu.Unlock()
	m.dropGone(gone)
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
		if id != except && s.opts.Owner == owner && s.state != StateClosed {
			ids[id] = true
		}
		s.mu.Unlock()
	}
	sh := &m.share
	sh.mu.Lock()
	for id, o := range sh.fileOwner {
		if o == owner && id != except && !sh.pendingClosed[id] {
			ids[id] = true
		}
	}
	sh.mu.Unlock()
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
	sh := &m.share
	sh.mu.Lock()
	for _, n := range slices.Backward(sh.closedHere) {
		if slices.Contains(n.ClaudeSessionIDs, id) {
			sh.mu.Unlock()
			return n.Owner, true
		}
	}
	sh.mu.Unlock()
	if m.store == nil {
		return "", false
	}
	st, _, err := m.store.Read()
	if err != nil {
		m.log.Warn("reading the session registry", "path", m.cfg.Registry.Path(), "err", err)
	}
	return st.ConversationOwner(id)
}
