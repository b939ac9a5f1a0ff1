package sessions

import "time"

// Claims and fencing: a session's process runs on one instance at a time.
//
// An instance claims a session in the registry before its process starts
// (see store.Claim): a claim holds for the lease unless renewed (every
// third of it, by sharing.Instance's renewal and by every merge). An instance whose claim
// lapsed (it was paused past the lease — SIGSTOP, a suspended laptop, a
// long stall — or could not write the registry) and passed to another
// instance learns it at its next merge (store.Merged.Lost): it kills its
// own process for the session (the session is dormant here, and resumes
// here only with a new claim). Before anything is sent to a process — a prompt, a model,
// mode or effort switch; an interrupt may always go — fence checks the
// claim: when more of the lease has passed since it was last confirmed
// than the renewals allow, it is confirmed against the file first.

// now is the manager's clock: time.Now, or the tests' clock.
func (m *Manager) now() time.Time {
	if m.cfg.now != nil {
		return m.cfg.now()
	}
	return time.Now()
}

// fence makes sure that s's process, which runs here, may still be used
// before anything is sent to it: when the claim on s passed to another
// instance, the process is killed and the error (ErrElsewhere) says so;
// when the claim was last confirmed longer ago than the renewals allow
// (this instance was paused, say), it is confirmed against the registry
// first (and renewed). Call it without holding any lock.
func (m *Manager) fence(s *Session) error {
	if m.store == nil {
		return nil
	}
	lost, due, ago := m.share.Confirm(s.ID)
	switch {
	case lost != nil:
		m.fenceOff(s, lost)
		return lost
	case !due:
		return nil
	}
	s.log.Info("confirming the claim on the session before using its process: its last renewal was long ago", "ago", ago.Round(time.Millisecond), "lease", m.share.Lease())
	return m.sync(s)
}

// fenceOff kills s's process, whose claim passed to another instance, and
// fails its running turn with why. Nothing more reaches the process: it is
// killed, not stopped gracefully, so that it writes nothing more to the
// conversation's transcript, which the other instance now continues.
func (m *Manager) fenceOff(s *Session, why error) {
	s.mu.Lock()
	p, t, done := s.proc, s.cur, s.pumpDone
	s.mu.Unlock()
	if p == nil {
		return
	}
	s.log.Error("another instance sharing the session registry took the session over while this instance's claim had lapsed; killing its claude process here",
		"pid", p.PID(), "err", why)
	if t != nil {
		t.Fail(why.Error())
	}
	p.Kill()
	if done != nil {
		<-done
	}
}
