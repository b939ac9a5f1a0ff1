package sessions

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"time"
)

// sync merges this instance's sessions into the registry under its lock.
// Per session: a session whose process runs here under this instance's
// claim is written as it is here, and the claim renewed; otherwise the
// side that changed since the last sync wins (both: the one used last),
// and this instance takes over the file's record when that wins. Sessions
// only the file has stay; sessions closed here get tombstones; sessions
// another instance closed are closed here too. A session whose claim
// passed to another instance while its process ran here is fenced off: its
// process is killed and the file's record wins (see registry_fence.go).
// The costs spent here since the last merge are added to the file's
// totals, and the totals read back. With claim set, s is claimed for a
// start (see Manager.claim), or, when its process runs, its claim is
// confirmed (see fence); the error says why it may not start or go on.
// Write errors are reported through PersistFailing.
func (m *Manager) sync(claim *Session) error {
	sh := &m.share
	sh.saveMu.Lock()
	type ours struct {
		s       *Session
		e       RegistryEntry
		live    bool // its process runs or starts here
		running bool // its process runs here
	}
	var mine []ours
	for _, s := range m.list() {
		s.mu.Lock()
		if !s.opts.Temporary && s.state != StateClosed {
			live := s.proc != nil || s.state == StateStarting || s.state == StateQueued || s.state == StateRunning
			mine = append(mine, ours{s, s.entryLocked(), live, s.proc != nil})
		}
		s.mu.Unlock()
	}
	m.persistMu.Lock()
	closed := slices.Clone(sh.closed)
	spent, userSpent := sh.unsaved, maps.Clone(sh.userUnsaved)
	m.persistMu.Unlock()

	type refresh struct {
		s *Session
		e RegistryEntry
	}
	var (
		take      []refresh
		gone      []*Session
		lost      []*Session
		claimErr  error
		base      = map[string]string{}
		claimed   = map[string]uint64{} // the claims written: generation by session id
		holding   bool
		total     float64
		userTotal map[string]float64
		owners    map[string]string
		at        time.Time // when the claims were written, on this instance's clock
	)
	info, err := m.cfg.Registry.update(func(f *registryFile, _ time.Time) {
		at = m.now()
		now := at.Round(0).UTC()
		take, gone, lost, claimErr, holding = nil, nil, nil, nil, false
		clear(base)
		clear(claimed)
		if f.Closed == nil {
			f.Closed = tombstoneMap{}
		}
		if f.Live == nil {
			f.Live = map[string]registryClaim{}
		}
		if f.ClaimGen == nil {
			f.ClaimGen = map[string]uint64{}
		}
		for _, n := range closed {
			f.Closed[n.id] = tombstone{Closed: now, Owner: n.owner, ClaudeSessionIDs: n.ids}
		}
		for id, c := range f.Live {
			if _, ok := f.Closed[id]; ok || (c.Instance != sh.me.Instance && !sh.foreign(c, now)) {
				delete(f.Live, id) // closed, expired, or of a dead process
			}
		}
		f.Sessions = slices.DeleteFunc(f.Sessions, func(e RegistryEntry) bool {
			_, ok := f.Closed[e.SessionID]
			return ok
		})
		index := map[string]int{}
		for i, e := range f.Sessions {
			index[e.SessionID] = i
		}
		for _, o := range mine {
			id := o.s.ID
			i, inFile := index[id]
			if sh.closedElsewhere(f, id, inFile) {
				gone = append(gone, o.s)
				if o.s == claim {
					claimErr = fmt.Errorf("%w: session %s was closed on another claude-agent-mcp instance sharing this server's session registry", ErrClosed, id)
				}
				continue
			}
			c, isClaimed := f.Live[id]
			foreign := isClaimed && sh.foreign(c, now)
			gen := f.ClaimGen[id]
			h := sh.heldClaim(id)
			// stale: the claim this instance got has passed on since.
			stale := h.gen != 0 && (gen != h.gen || (isClaimed && c.Instance != sh.me.Instance))
			starting := o.s == claim && !o.running
			fenced := !starting && o.live && (foreign || stale || h.lost != nil)
			if fenced {
				why := h.lost
				if why == nil {
					why = lostError(id, c, foreign)
					sh.mu.Lock()
					sh.held[id] = heldClaim{lost: why}
					sh.mu.Unlock()
				}
				lost = append(lost, o.s)
				if o.s == claim {
					claimErr = why
				}
			}
			prev, synced := sh.base[id]
			mineKey := entryKey(o.e)
			if inFile {
				fileKey := entryKey(f.Sessions[i])
				takeFile := false
				switch {
				case fileKey == mineKey:
				case fenced || prev == lostBase || foreign:
					takeFile = true // the instance that runs it, or took it over, knows best
				case o.live && h.gen != 0 && o.s != claim:
					// It runs here under this instance's claim: no other
					// instance changed it meanwhile.
				case synced && mineKey == prev:
					takeFile = true
				case synced && fileKey == prev:
				default:
					takeFile = f.Sessions[i].LastUsed.After(o.e.LastUsed)
				}
				if takeFile {
					take = append(take, refresh{o.s, f.Sessions[i]})
					base[id] = fileKey
				} else {
					f.Sessions[i] = o.e
					base[id] = mineKey
				}
			} else {
				f.Sessions = append(f.Sessions, o.e)
				base[id] = mineKey
			}
			switch {
			case fenced:
			case starting && foreign:
				claimErr = elsewhereError(id, c)
			case o.live && !foreign:
				g := gen
				if h.gen == 0 || stale {
					g = gen + 1 // a new claim
				}
				f.ClaimGen[id] = g
				me := sh.me
				me.Gen, me.Until = g, now.Add(sh.lease)
				f.Live[id] = me
				claimed[id] = g
				holding = true
			case isClaimed && c.Instance == sh.me.Instance:
				delete(f.Live, id)
			}
		}
		f.SpentUSD += spent
		for u, v := range userSpent {
			if f.UserSpentUSD == nil {
				f.UserSpentUSD = map[string]float64{}
			}
			f.UserSpentUSD[u] += v
		}
		total, userTotal = f.SpentUSD, maps.Clone(f.UserSpentUSD)
		owners = openOwners(f)
	})

	m.persistMu.Lock()
	was := m.persistErr
	m.persistErr = err
	if err == nil {
		// What was written is in the file's totals now; what came since
		// waits for the next merge.
		sh.closed = sh.closed[len(closed):]
		sh.unsaved -= spent
		m.spent = total + sh.unsaved
		for u, v := range userSpent {
			sh.userUnsaved[u] -= v
		}
		m.userSpent = userTotal
		for u, v := range sh.userUnsaved {
			if v != 0 {
				if m.userSpent == nil {
					m.userSpent = map[string]float64{}
				}
				m.userSpent[u] += v
			}
		}
		sh.holding = holding
	}
	m.persistMu.Unlock()
	if err == nil {
		sh.base, sh.lastSync = base, at.Round(0).UTC()
		sh.mu.Lock()
		held := map[string]heldClaim{}
		for _, o := range mine {
			if g, ok := claimed[o.s.ID]; ok {
				held[o.s.ID] = heldClaim{gen: g, confirmed: at}
			} else if h := sh.held[o.s.ID]; h.lost != nil && !slices.Contains(gone, o.s) {
				held[o.s.ID] = h // until this instance claims it again
			}
		}
		sh.held = held
		sh.seen, sh.fileOwner = info, owners
		for _, n := range closed {
			delete(sh.pendingClosed, n.id)
		}
		sh.mu.Unlock()
		for _, r := range take {
			r.s.mu.Lock()
			if r.s.proc != nil || r.s.cur != nil {
				// Fenced off, its process not stopped yet, or its failed
				// turn not recorded yet: the file's record wins at the
				// next merge too.
				sh.base[r.s.ID] = lostBase
			}
			if r.s.proc != nil {
				r.s.mu.Unlock()
				continue
			}
			r.s.applyEntryLocked(r.e)
			path := r.s.transcriptPath()
			r.s.mu.Unlock()
			h, herr := loadTranscript(path)
			if herr != nil {
				r.s.log.Warn("reading the transcript for the history", "path", path, "err", herr)
			}
			r.s.mu.Lock()
			r.s.setHistoryLocked(h)
			r.s.mu.Unlock()
		}
	}
	sh.saveMu.Unlock()

	switch {
	case err != nil && was == nil:
		m.log.Error("saving the session registry: sessions will not survive a restart until it can be written", "err", err)
	case err == nil && was != nil:
		m.log.Info("the session registry is written again")
	}
	m.dropGone(gone)
	for _, s := range lost {
		m.fenceOff(s, sh.heldClaim(s.ID).lost)
	}
	return claimErr
}

// refresh looks at the registry again when it changed since this instance
// last read or wrote it (a stat when it did not): sessions closed on
// another instance are closed here too, and the open sessions of other
// instances are counted for the per-user quota. Call it without holding
// any lock.
func (m *Manager) refresh() {
	r := m.cfg.Registry
	if r == nil {
		return
	}
	sh := &m.share
	st, err := os.Stat(r.path)
	sh.mu.Lock()
	seen := sh.seen
	sh.mu.Unlock()
	if sameFileInfo(seen, st, err) {
		return
	}
	sh.saveMu.Lock()
	r.mu.Lock()
	f, info, err := r.readLocked()
	r.mu.Unlock()
	if err != nil {
		sh.saveMu.Unlock()
		return // the next merge reports it
	}
	inFile := map[string]bool{}
	for _, e := range f.Sessions {
		inFile[e.SessionID] = true
	}
	var gone []*Session
	for _, s := range m.list() {
		s.mu.Lock()
		skip := s.opts.Temporary || s.state == StateClosed
		s.mu.Unlock()
		if !skip && sh.closedElsewhere(&f, s.ID, inFile[s.ID]) {
			gone = append(gone, s)
		}
	}
	sh.mu.Lock()
	sh.seen, sh.fileOwner = info, openOwners(&f)
	sh.mu.Unlock()
	sh.saveMu.Unlock()
	m.dropGone(gone)
}

// sameFileInfo reports whether the file now (or the error of its stat) is
// the one seen: the same file, size and modification time; or, when there
// is none to stat, none was seen either.
func sameFileInfo(seen, now os.FileInfo, err error) bool {
	if err != nil {
		return seen == nil
	}
	return seen != nil && os.SameFile(seen, now) && seen.Size() == now.Size() && seen.ModTime().Equal(now.ModTime())
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
// knows (see Registry.ConversationOwner). "" is a session made over stdio;
// known is false when no session with that conversation is known.
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
		if slices.Contains(n.ids, id) {
			sh.mu.Unlock()
			return n.owner, true
		}
	}
	sh.mu.Unlock()
	if m.cfg.Registry != nil {
		return m.cfg.Registry.ConversationOwner(id)
	}
	return "", false
}
