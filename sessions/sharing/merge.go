package sharing

import (
	"maps"
	"slices"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// merge merges this instance's sessions into the registry under its lock
// (see store.Merge for who wins): locals makes the records of the sessions
// (called under the lock that orders merges), the store merges them, and
// take takes over each record that won over the instance's (it reports
// whether the stored record must win at the next merge too). With claim
// set, that session is claimed for a start, or its claim confirmed;
// out.ClaimErr and out.ClaimClosed say why it may not start or go on.
// Sync drops the sessions out.Gone names and fences off the processes of
// out.Lost. A write error is logged when it begins or ends, and reported
// by Failing.
func (sh *Instance) merge(locals func() []store.Local, claim string, take func(store.Entry) (again bool)) (store.Merged, error) {
	sh.saveMu.Lock()
	in := sh.mergeInput(locals(), claim)
	var out store.Merged
	var at time.Time // when the claims were written, on this instance's clock
	stamp, err := sh.cfg.Store.Update(func(st *store.State, _ time.Time) {
		at = sh.cfg.Now()
		out = in.Apply(st, at)
	})
	was := sh.recordMerge(in, out, stamp, at, err)
	if err == nil {
		for range out.Broken {
			if sh.cfg.OnTakeover != nil {
				sh.cfg.OnTakeover()
			}
		}
		for _, e := range out.Take {
			if take(e) {
				sh.base[e.SessionID] = store.LostBase
			}
		}
	}
	sh.saveMu.Unlock()
	switch {
	case err != nil && was == nil:
		sh.cfg.Log.Error("saving the session registry: sessions will not survive a restart until it can be written", "err", err)
	case err == nil && was != nil:
		sh.cfg.Log.Info("the session registry is written again")
	}
	return out, err
}

// mergeInput is what this instance brings to a merge: its sessions'
// records, what it closed and spent since the last merge, and what it
// knows of its claims. saveMu is held.
func (sh *Instance) mergeInput(locals []store.Local, claim string) *store.Merge {
	in := &store.Merge{Me: sh.me, Lease: sh.lease, Base: sh.base, LastSync: sh.lastSync, Sessions: locals, Claim: claim}
	sh.costMu.Lock()
	in.Closed = slices.Clone(sh.closed)
	in.SpentUSD, in.UserSpentUSD = sh.unsaved, maps.Clone(sh.userUnsaved)
	sh.costMu.Unlock()
	sh.mu.Lock()
	in.Held = maps.Clone(sh.held)
	sh.mu.Unlock()
	return in
}

// recordMerge brings the outcome of a merge in: the claims it lost (also
// when the write failed), and, when it was written, the costs (what was
// written is in the store's totals now; what came since waits for the
// next merge), the claims held, the base of each session, the tombstones
// written. It returns the error of the previous write. saveMu is held.
func (sh *Instance) recordMerge(in *store.Merge, out store.Merged, stamp store.Stamp, at time.Time, err error) (was error) {
	sh.mu.Lock()
	for id, why := range out.Lost {
		sh.held[id] = store.Held{Lost: why} // until this instance claims it again
	}
	sh.mu.Unlock()

	sh.costMu.Lock()
	was = sh.writeErr
	sh.writeErr = err
	if err == nil {
		sh.closed = sh.closed[len(in.Closed):]
		sh.unsaved -= in.SpentUSD
		sh.spent = out.SpentUSD + sh.unsaved
		for u, v := range in.UserSpentUSD {
			sh.userUnsaved[u] -= v
		}
		sh.userSpent = out.UserSpentUSD
		for u, v := range sh.userUnsaved {
			if v != 0 {
				if sh.userSpent == nil {
					sh.userSpent = map[string]float64{}
				}
				sh.userSpent[u] += v
			}
		}
		sh.holding = out.Holding
	}
	sh.costMu.Unlock()
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
// last read or wrote it (a stat when it did not), and returns those of the
// sessions shared names (called under the lock that orders merges) that
// another instance closed; the owners of the open sessions are noted for
// CountOwned.
func (sh *Instance) refresh(shared func() []string) (gone []string) {
	if sh.cfg.Store == nil {
		return nil
	}
	sh.mu.Lock()
	seen := sh.seen
	sh.mu.Unlock()
	if !sh.cfg.Store.Changed(seen) {
		return nil
	}
	sh.saveMu.Lock()
	defer sh.saveMu.Unlock()
	st, stamp, err := sh.cfg.Store.Read()
	if err != nil {
		return nil // the next merge reports it
	}
	inFile := map[string]bool{}
	for _, e := range st.Sessions {
		inFile[e.SessionID] = true
	}
	for _, id := range shared() {
		if _, synced := sh.base[id]; st.ClosedElsewhere(id, inFile[id], synced, sh.lastSync) {
			gone = append(gone, id)
		}
	}
	sh.mu.Lock()
	sh.seen, sh.fileOwner = stamp, st.Owners()
	sh.mu.Unlock()
	return gone
}

// Known reports whether a merge has seen the session id in the registry:
// a session the registry never held needs no claim.
func (sh *Instance) Known(id string) bool {
	if sh.cfg.Store == nil {
		return false
	}
	sh.saveMu.Lock()
	defer sh.saveMu.Unlock()
	_, ok := sh.base[id]
	return ok
}

// restore reads the registry at the start: the costs so far become this
// instance's, and track (called under the lock that orders merges)
// restores sessions of the state and returns the entries it restored,
// which become the base of their sessions.
func (sh *Instance) restore(track func(st store.State) []store.Entry) {
	if sh.cfg.Store == nil {
		return
	}
	st, _, err := sh.cfg.Store.Read()
	if err != nil {
		sh.cfg.Log.Error("reading the session registry; starting without it", "path", sh.cfg.Path, "err", err)
		st = store.State{}
	}
	sh.costMu.Lock()
	sh.spent, sh.userSpent = st.SpentUSD, maps.Clone(st.UserSpentUSD)
	sh.costMu.Unlock()
	sh.saveMu.Lock()
	defer sh.saveMu.Unlock()
	for _, e := range track(st) {
		sh.base[e.SessionID] = store.Key(e)
	}
}

// Adopt takes up a session this instance does not hold: adopt runs under
// the lock that orders merges and adoptions, read reads the registry, and
// the entry adopt returns (nil for none) becomes its session's base.
func (sh *Instance) Adopt(adopt func(read func() store.State) (*store.Entry, error)) error {
	sh.saveMu.Lock()
	defer sh.saveMu.Unlock()
	read := func() store.State {
		st, _, err := sh.cfg.Store.Read()
		if err != nil {
			sh.cfg.Log.Warn("reading the session registry", "path", sh.cfg.Path, "err", err)
		}
		return st
	}
	e, err := adopt(read)
	if err == nil && e != nil {
		sh.base[e.SessionID] = store.Key(*e)
	}
	return err
}
