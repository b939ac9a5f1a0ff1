package sessions

import (
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/live"
)

// The manager's side of package live (the live-process pool and the warm
// spares): a session as a holder of a live place.

// sessionHolder is a session as the pool sees it (live.Holder); the
// session's own methods stay unexported.
type sessionHolder struct{ s *Session }

// IdleSince implements live.Holder: an idle live session can give its
// process up.
func (h sessionHolder) IdleSince() (time.Time, bool) { return h.s.idleSince() }

// Evict implements live.Holder: the session goes dormant.
func (h sessionHolder) Evict(reason string) bool { return h.s.makeDormant(reason) }

// holder is s in the pool.
func (s *Session) holder() live.Holder { return sessionHolder{s} }
