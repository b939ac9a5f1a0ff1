package sessions

import (
	"fmt"
	"slices"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// sync merges this instance's sessions into the registry (see
// sharing.Instance.Merge and store.Merge for who wins): it makes records
// of the sessions, and brings the outcome back — takeOver for the records
// that won, dropGone for the sessions another instance closed, fenceOff
// for those whose claim passed to another instance. With claim set, s is
// claimed for a start (see Manager.claimInRegistry), or, when its process
// runs, its claim is confirmed (see fence); the error says why it may not
// start or go on. Write errors are reported through PersistFailing.
func (m *Manager) sync(claim *Session) error {
	byID := map[string]*Session{}
	locals := func() []store.Local {
		var out []store.Local
		for _, s := range m.list() {
			if l, ok := s.local(); ok {
				out = append(out, l)
				byID[s.ID] = s
			}
		}
		return out
	}
	claimID := ""
	if claim != nil {
		claimID = claim.ID
	}
	out, _ := m.share.Merge(locals, claimID, func(e store.Entry) bool {
		s := byID[e.SessionID]
		return s != nil && s.takeOver(e)
	})
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

// refresh looks at the registry again when it changed since this instance
// last read or wrote it (see sharing.Instance.Refresh): sessions closed on
// another instance are closed here too, and the open sessions of other
// instances are counted for the per-user quota. Call it without holding
// any lock.
func (m *Manager) refresh() {
	byID := map[string]*Session{}
	gone := m.share.Refresh(func() []string {
		var ids []string
		for _, s := range m.list() {
			if s.shared() {
				ids = append(ids, s.ID)
				byID[s.ID] = s
			}
		}
		return ids
	})
	var drop []*Session
	for _, id := range gone {
		drop = append(drop, byID[id])
	}
	m.dropGone(drop)
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
