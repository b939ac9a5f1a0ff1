package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// Leases: a session's process runs on one instance at a time. The
// instance takes the session's lease before the process starts (Acquire),
// renews it every third of its length while the process lives (a
// goroutine per lease), and gives it up when the process ends (Release).
// Every write of the session checks the lease's epoch in the store's
// transaction; a renewal or write that finds it passed on (ErrFenced)
// fences the session off: its process is killed (Host.FenceOff).

const (
	// DefaultLease is how long a lease holds without renewal: the time after
	// which a session of an instance that died without releasing it may run
	// elsewhere.
	DefaultLease = 60 * time.Second
	// leaseEnv sets the lease when Config.Lease is 0: a testing knob.
	leaseEnv = "CLAUDE_AGENT_MCP_LEASE"
)

// held is a lease held here.
type held struct {
	lease     store.Lease
	confirmed time.Time // when the store last confirmed it (monotonic)
	lost      error     // it passed to another instance
	stop      chan struct{}
	done      chan struct{}
}

// setLease sets the lease and the renewal interval (a third of it).
func (i *Instance) setLease() {
	i.lease = i.cfg.Lease
	if i.lease <= 0 {
		i.lease = DefaultLease
		if v := os.Getenv(leaseEnv); v != "" {
			if d, err := time.ParseDuration(v); err == nil && d > 0 {
				i.lease = d
				i.cfg.Log.Warn("the lease on shared sessions is set by "+leaseEnv+", a testing knob", "lease", d)
			} else {
				i.cfg.Log.Error("ignoring an invalid "+leaseEnv+" (a duration such as 3s)", "value", v)
			}
		}
	}
	i.renew = i.lease / 3
}

// Lease is how long a lease holds without renewal.
func (i *Instance) Lease() time.Duration { return i.lease }

// Acquire takes the lease on session id before its process starts here,
// and renews it until Release; h is told when it is lost. A session
// another instance runs fails with an error wrapping
// store.ErrElsewhere; one another instance closed with
// Config.ErrClosed.
func (i *Instance) Acquire(ctx context.Context, id string, h Host) error {
	if i.cfg.Store == nil {
		return nil
	}
	i.mu.Lock()
	if c := i.held[id]; c != nil && c.lost == nil {
		i.mu.Unlock()
		return nil
	}
	i.mu.Unlock()
	i.forget(id) // a lost lease, taken again
	l, lapsed, err := i.cfg.Store.Acquire(ctx, id, i.holder, i.lease)
	var ee *store.ElsewhereError
	switch {
	case errors.As(err, &ee):
		return fmt.Errorf("%w: session %s runs on another claude-agent-mcp instance sharing this server's session store (%s); its lease runs until %s (in %s): send the query to that instance (route by the Mcp-Session-Id header), or retry then — if that instance has stopped, its lease lapses at that time and this instance serves the session; if it runs, it gives the session up when the session goes dormant there",
			store.ErrElsewhere, id, ee.Holder, ee.Until.UTC().Format(time.RFC3339Nano), max(time.Until(ee.Until), 0).Round(100*time.Millisecond))
	case errors.Is(err, store.ErrNotFound):
		return nil // a session the store could not keep runs all the same
	case errors.Is(err, store.ErrClosed):
		return fmt.Errorf("%w: session %s was closed on another claude-agent-mcp instance sharing this server's session store", i.cfg.ErrClosed, id)
	case err != nil:
		return fmt.Errorf("taking the session's lease in the session store: %w", err)
	}
	if i.takesOver(lapsed) {
		i.cfg.Log.Info("took over the lease on the session: the instance that held it let it lapse", "session_id", id, "holder", lapsed)
		if i.cfg.OnTakeover != nil {
			i.cfg.OnTakeover()
		}
	}
	c := &held{lease: l, confirmed: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	i.mu.Lock()
	i.held[id] = c
	i.mu.Unlock()
	go i.renewal(id, c, h)
	return nil
}

// renewal renews c every third of the lease until it is released or lost.
func (i *Instance) renewal(id string, c *held, h Host) {
	defer close(c.done)
	t := time.NewTicker(i.renew)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		if err := i.renewNow(id, c); errors.Is(err, store.ErrFenced) {
			_, lost := i.leaseOf(id)
			go h.FenceOff(id, lost) // which waits for the process's end, and that for Release
			return
		}
	}
}

// renewNow renews c; a lease found passed on is marked lost.
func (i *Instance) renewNow(id string, c *held) error {
	i.mu.Lock()
	l := c.lease
	i.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), i.renew)
	defer cancel()
	nl, err := i.cfg.Store.Renew(ctx, l, i.lease)
	switch {
	case errors.Is(err, store.ErrFenced):
		i.lose(id, err)
	case err != nil:
		i.cfg.Log.Warn("renewing the lease on the session", "session_id", id, "err", err)
	default:
		i.mu.Lock()
		c.lease, c.confirmed = nl, time.Now()
		i.mu.Unlock()
	}
	return err
}

// lose marks the lease on id lost to another instance.
func (i *Instance) lose(id string, why error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if c := i.held[id]; c != nil && c.lost == nil {
		c.lost = fmt.Errorf("%w: this instance's lease on session %s lapsed (it was paused, or could not renew the lease, for longer than the lease) and another claude-agent-mcp instance took the session over, so this instance stopped its own claude process for it before sending anything more to it; send the query to that instance, or retry once the session is dormant there (%v)",
			store.ErrElsewhere, id, why)
	}
}

// leaseOf is the lease held on id (zero for none), or the error of a lost
// one.
func (i *Instance) leaseOf(id string) (store.Lease, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	c := i.held[id]
	switch {
	case c == nil:
		return store.Lease{}, nil
	case c.lost != nil:
		return store.Lease{}, c.lost
	}
	return c.lease, nil
}

// Fence makes sure that the process of session id, which runs here, may
// still be used before anything is sent to it: a lease lost, or found
// passed on when it was confirmed longer ago than the renewals allow (this
// instance was paused), fences the session off (h) and is the error.
func (i *Instance) Fence(id string, h Host) error {
	i.mu.Lock()
	c := i.held[id]
	var lost error
	due := false
	if c != nil {
		lost, due = c.lost, time.Since(c.confirmed) >= i.lease-i.renew
	}
	i.mu.Unlock()
	if c != nil && lost == nil && due {
		i.cfg.Log.Info("confirming the lease on the session before using its process: its last renewal was long ago", "session_id", id, "lease", i.lease)
		if err := i.renewNow(id, c); errors.Is(err, store.ErrFenced) {
			_, lost = i.leaseOf(id)
		}
	}
	if lost != nil {
		h.FenceOff(id, lost)
	}
	return lost
}

// Release gives the lease on id up (the process ended) and stops its
// renewal.
func (i *Instance) Release(id string) {
	i.mu.Lock()
	c := i.held[id]
	i.mu.Unlock()
	if c == nil {
		return
	}
	i.forget(id)
	if c.lost != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), i.lease)
	defer cancel()
	if err := i.cfg.Store.Release(ctx, c.lease); err != nil && !errors.Is(err, store.ErrFenced) {
		i.cfg.Log.Warn("releasing the lease on the session", "session_id", id, "err", err)
	}
}

// forget stops the renewal of the lease on id, if any, and drops it.
func (i *Instance) forget(id string) {
	i.mu.Lock()
	c := i.held[id]
	delete(i.held, id)
	i.mu.Unlock()
	if c != nil {
		close(c.stop)
		<-c.done
	}
}
