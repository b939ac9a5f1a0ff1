package sessions

import (
	"os"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// Claims and fencing: a session's process runs on one instance at a time.
//
// An instance claims a session in the registry before its process starts
// (see store.Claim): a claim holds for the lease unless renewed (every
// third of it, by renewClaims and by every merge). An instance whose claim
// lapsed (it was paused past the lease — SIGSTOP, a suspended laptop, a
// long stall — or could not write the registry) and passed to another
// instance learns it at its next merge (store.Merged.Lost): it kills its
// own process for the session (the session is dormant here, and resumes
// here only with a new claim). Before anything is sent to a process — a prompt, a model,
// mode or effort switch; an interrupt may always go — fence checks the
// claim: when more of the lease has passed since it was last confirmed
// than the renewals allow, it is confirmed against the file first.

const (
	// leaseTTL is how long a claim holds without renewal: the time after
	// which a session of an instance that died without releasing it (on
	// another host; on the same host a dead pid frees it at once) may run
	// elsewhere.
	leaseTTL = 60 * time.Second
	// leaseEnv sets the lease when Config.Lease is 0: a testing knob (the
	// end-to-end test of fencing pauses a server past a lease of seconds).
	leaseEnv = "CLAUDE_AGENT_MCP_LEASE"
)

// setLease sets the lease and the renewal interval (a third of it):
// Config.Lease, else $CLAUDE_AGENT_MCP_LEASE, else leaseTTL.
func (m *Manager) setLease() {
	sh := &m.share
	sh.lease = m.cfg.Lease
	if sh.lease <= 0 {
		sh.lease = leaseTTL
		if v := os.Getenv(leaseEnv); v != "" {
			if d, err := time.ParseDuration(v); err == nil && d > 0 {
				sh.lease = d
				m.log.Warn("the lease of claims on shared sessions is set by "+leaseEnv+", a testing knob", "lease", d)
			} else {
				m.log.Error("ignoring an invalid "+leaseEnv+" (a duration such as 3s)", "value", v)
			}
		}
	}
	sh.renew = sh.lease / 3
}

// now is the manager's clock: time.Now, or the tests' clock.
func (m *Manager) now() time.Time {
	if m.cfg.now != nil {
		return m.cfg.now()
	}
	return time.Now()
}

// since is how long ago then was, on both the monotonic clock and the wall
// clock, whichever says longer: the monotonic clock stands still while the
// machine sleeps, while another host's clock runs on.
func since(now, then time.Time) time.Duration {
	d := now.Sub(then)
	if w := now.Round(0).Sub(then.Round(0)); w > d {
		d = w
	}
	return d
}

// heldClaim is what this instance knows of its claim on session id.
func (sh *shareState) heldClaim(id string) store.Held {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.held[id]
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
	sh := &m.share
	h := sh.heldClaim(s.ID)
	switch {
	case h.Lost != nil:
		m.fenceOff(s, h.Lost)
		return h.Lost
	case h.Gen == 0:
		return nil // no claim: a session the registry never held, or one it cannot hold
	}
	ago := since(m.now(), h.Confirmed)
	if ago < sh.lease-sh.renew {
		return nil
	}
	s.log.Info("confirming the claim on the session before using its process: its last renewal was long ago", "ago", ago.Round(time.Millisecond), "lease", sh.lease)
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
