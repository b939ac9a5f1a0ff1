package sharing

import (
	"os"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// Claims and their lease: a session's process runs on one instance at a
// time. An instance claims a session in the registry before its process
// starts (see store.Claim): a claim holds for the lease unless renewed
// (every third of it, by the renewal and by every merge). An instance
// whose claim lapsed and passed to another learns it at its next merge
// (store.Merged.Lost); before anything is sent to a process, the manager
// asks Confirm whether the claim must be confirmed against the registry
// first.

const (
	// DefaultLease is how long a claim holds without renewal: the time after
	// which a session of an instance that died without releasing it (on
	// another host; on the same host a dead pid frees it at once) may run
	// elsewhere.
	DefaultLease = 60 * time.Second
	// leaseEnv sets the lease when Config.Lease is 0: a testing knob (the
	// end-to-end test of fencing pauses a server past a lease of seconds).
	leaseEnv = "CLAUDE_AGENT_MCP_LEASE"
)

// setLease sets the lease and the renewal interval (a third of it):
// Config.Lease, else $CLAUDE_AGENT_MCP_LEASE, else DefaultLease.
func (sh *Instance) setLease() {
	sh.lease = sh.cfg.Lease
	if sh.lease <= 0 {
		sh.lease = DefaultLease
		if v := os.Getenv(leaseEnv); v != "" {
			if d, err := time.ParseDuration(v); err == nil && d > 0 {
				sh.lease = d
				sh.cfg.Log.Warn("the lease of claims on shared sessions is set by "+leaseEnv+", a testing knob", "lease", d)
			} else {
				sh.cfg.Log.Error("ignoring an invalid "+leaseEnv+" (a duration such as 3s)", "value", v)
			}
		}
	}
	sh.renew = sh.lease / 3
}

// Me is this instance as its claims name it.
func (sh *Instance) Me() store.Claim { return sh.me }

// Lease is how long a claim holds without renewal.
func (sh *Instance) Lease() time.Duration { return sh.lease }

// Confirm says what the claim on session id allows before its process is
// used: lost (last) is the error of a claim that passed to another instance (the
// process must be killed); due is set when the claim was last confirmed
// longer ago (ago) than the renewals allow, so that it must be confirmed
// against the registry first (a merge claiming it).
func (sh *Instance) Confirm(id string) (due bool, ago time.Duration, lost error) {
	if sh.cfg.Store == nil {
		return false, 0, nil
	}
	sh.mu.Lock()
	h := sh.held[id]
	sh.mu.Unlock()
	switch {
	case h.Lost != nil:
		return false, 0, h.Lost
	case h.Gen == 0:
		return false, 0, nil // no claim: a session the registry never held, or one it cannot hold
	}
	ago = since(sh.cfg.Now(), h.Confirmed)
	return ago >= sh.lease-sh.renew, ago, nil
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
