package sessions

import (
	"fmt"
	"time"
)

// makeRoomFor keeps a user within --user-max-live: when s's owner has that
// many live sessions, the least recently used idle one goes dormant; when
// none is idle, s cannot start.
func (m *Manager) makeRoomFor(s *Session) error {
	owner, limit := s.opts.Owner, m.cfg.UserMaxLive
	if owner == "" || limit <= 0 {
		return nil
	}
	for range limit + 1 {
		var live int
		var victim *Session
		var oldest time.Time
		for _, o := range m.List() {
			if o == s || o.opts.Owner != owner {
				continue
			}
			since, idle := o.idleSince()
			o.mu.Lock()
			isLive := o.proc != nil
			o.mu.Unlock()
			if !isLive {
				continue
			}
			live++
			if idle && (victim == nil || since.Before(oldest)) {
				victim, oldest = o, since
			}
		}
		if live < limit {
			return nil
		}
		if victim == nil {
			return fmt.Errorf("%w: user %s has %d live sessions, all busy, and this server allows a user %d (--user-max-live); wait for one to finish", ErrTooMany, owner, live, limit)
		}
		victim.makeDormant("user-max-live reached")
	}
	return fmt.Errorf("%w: user %s is at --user-max-live %d", ErrTooMany, owner, limit)
}
