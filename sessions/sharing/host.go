package sharing

import (
	"fmt"
	"slices"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// Host is the manager as one merge, look or claim check sees it: it makes
// the records of the sessions the registry keeps and acts on the outcome
// for those sessions. Locals and TakeOver are called under the lock that
// orders merges, Drop and FenceOff after it.
type Host interface {
	// Locals returns the records of the sessions the registry keeps.
	Locals() []store.Local
	// TakeOver takes over the stored record of its session, and reports
	// whether the stored record must win at the next merge too.
	TakeOver(e store.Entry) (again bool)
	// Drop closes here the session id, which another instance closed.
	Drop(id string)
	// FenceOff kills the process of session id, whose claim passed to
	// another instance, and fails its running turn with why.
	FenceOff(id string, why error)
}

// Sync merges h's sessions into the registry (see merge and store.Merge
// for who wins) and brings the outcome back: the records that won are
// taken over, the sessions another instance closed dropped, the processes
// whose claim passed to another instance fenced off. With claim set, that
// session is claimed for a start, or, when its process runs, its claim is
// confirmed (see Fence); the error says why it may not start or go on
// (Config.ErrClosed when another instance closed it). Write errors are
// reported by Failing.
func (sh *Instance) Sync(h Host, claim string) error {
	out, _ := sh.merge(h.Locals, claim, h.TakeOver)
	for _, id := range out.Gone {
		h.Drop(id)
	}
	for id, why := range out.Lost {
		h.FenceOff(id, why)
	}
	switch {
	case out.ClaimClosed:
		return fmt.Errorf("%w: session %s was closed on another claude-agent-mcp instance sharing this server's session registry", sh.cfg.ErrClosed, claim)
	case out.ClaimErr != nil:
		return out.ClaimErr
	}
	return nil
}

// Look looks at the registry again when it changed since this instance
// last read or wrote it (see refresh): h drops the sessions another
// instance closed, and the open sessions of other instances are counted
// for CountOwned.
func (sh *Instance) Look(h Host) {
	gone := sh.refresh(func() []string {
		var ids []string
		for _, l := range h.Locals() {
			ids = append(ids, l.Entry.SessionID)
		}
		return ids
	})
	for _, id := range gone {
		h.Drop(id)
	}
}

// Fence makes sure that the process of session id, which runs here, may
// still be used before anything is sent to it: when the claim passed to
// another instance, h fences it off and the error (store.ErrElsewhere)
// says so; when the claim was last confirmed longer ago than the renewals
// allow (this instance was paused, say), it is confirmed against the
// registry first (and renewed) by a Sync claiming it.
func (sh *Instance) Fence(h Host, id string) error {
	due, ago, lost := sh.Confirm(id)
	switch {
	case lost != nil:
		h.FenceOff(id, lost)
		return lost
	case !due:
		return nil
	}
	sh.cfg.Log.Info("confirming the claim on the session before using its process: its last renewal was long ago",
		"session_id", id, "ago", ago.Round(time.Millisecond), "lease", sh.lease)
	return sh.Sync(h, id)
}

// Restore reads the registry at the start (the costs so far become this
// instance's) and hands restore its open sessions, at most max of them,
// the most recently used first (called under the lock that orders
// merges); they become the base of their sessions. The sessions beyond
// max stay in the registry.
func (sh *Instance) Restore(max int, restore func(store.Entry)) {
	sh.restore(func(st store.State) []store.Entry {
		entries := slices.DeleteFunc(st.Sessions, func(e store.Entry) bool { return e.SessionID == "" })
		slices.SortStableFunc(entries, func(a, b store.Entry) int { return b.LastUsed.Compare(a.LastUsed) })
		if len(entries) > max {
			for _, e := range entries[max:] {
				sh.cfg.Log.Warn("not restoring a session beyond --max-sessions; it stays in the registry (a query by its id takes it up once there is room) and its conversation on disk (continue it with resumeSessionId)",
					"session_id", e.SessionID, "claude_session_id", e.ClaudeSessionID, "max_sessions", max)
			}
			entries = entries[:max]
		}
		for _, e := range entries {
			restore(e)
		}
		return entries
	})
}
