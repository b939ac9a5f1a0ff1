package store

import (
	"fmt"
	"time"
)

// Claims: a session's process runs on one instance at a time.
//
// An instance claims a session in the store before its process starts: a
// claim names the instance (its host and pid), carries a generation, and
// holds for the lease unless renewed. Each new claim takes the next
// generation of the session, so an instance whose claim lapsed (it was
// paused past the lease, or could not write the store) and passed to
// another instance sees at its next merge that its generation is stale,
// and never renews over the other's claim (see Merge). What an instance
// does with a lost claim — stop its process — is its own business.

// Claim says which server instance runs a session's process.
type Claim struct {
	Instance string    `json:"instance"`
	Host     string    `json:"host,omitempty"`
	PIDNS    string    `json:"pidns,omitempty"` // Linux: the PID namespace, so that a pid is compared only within its own
	PID      int       `json:"pid"`
	Gen      uint64    `json:"gen,omitempty"` // the claim's generation (see State.ClaimGen)
	Until    time.Time `json:"until"`
}

// Foreign reports whether c is a valid claim of another instance than me:
// its lease runs, and, when it is of me's host and PID namespace, its
// process is alive.
func (me Claim) Foreign(c Claim, now time.Time) bool {
	if c.Instance == "" || c.Instance == me.Instance || !now.Before(c.Until) {
		return false
	}
	if c.Host == me.Host && c.PIDNS == me.PIDNS && !processAlive(c.PID) {
		return false
	}
	return true
}

// Held is what an instance knows of its own claim on a session.
type Held struct {
	Gen       uint64    // the claim's generation; 0 when the instance holds none
	Confirmed time.Time // when the store last confirmed the claim (the instance's clock, monotonic)
	Lost      error     // the claim passed to another instance while the session's process ran on this one
}

func elsewhereError(id string, c Claim) error {
	return fmt.Errorf("%w: session %s runs on another claude-agent-mcp instance sharing this server's session registry (pid %d on host %s); send the query to that instance (route by the Mcp-Session-Id header), or retry once the session is dormant there (its idle timeout, or that instance stopping, releases it)",
		ErrElsewhere, id, c.PID, c.Host)
}

// The errors for a session whose claim passed to another instance while
// its process ran here: takenOverError while that instance runs it (c is
// its claim), releasedError once it has released it again.
const (
	lapsed  = "this instance's claim on the session lapsed (this instance was paused, or could not renew the claim, for longer than the lease)"
	stopped = "this instance stopped its own claude process for the session before sending anything more to it"
)

func takenOverError(id string, c Claim) error {
	return fmt.Errorf("%w: session %s runs on another claude-agent-mcp instance sharing this server's session registry (pid %d on host %s): %s and that instance took the session over, so %s; send the query to that instance (route by the Mcp-Session-Id header), or retry once the session is dormant there",
		ErrElsewhere, id, c.PID, c.Host, lapsed, stopped)
}

func releasedError(id string) error {
	return fmt.Errorf("%w: session %s was taken over by another claude-agent-mcp instance sharing this server's session registry: %s, so %s; that instance has released the session since: retry, and it resumes here with the conversation as that instance left it",
		ErrElsewhere, id, lapsed, stopped)
}
