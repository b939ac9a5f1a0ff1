package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// Orphans: a one-shot query's session (store.Record.Temporary) is
// closed by the instance that runs it once its answer is collected. When
// that instance dies mid-query (a SIGKILL, a crash, a power cut), the
// record would stay open for ever: counted against --max-sessions and
// --user-max-sessions, listed, closed by no one. The sweep closes such
// orphans: a temporary record that no instance holds the lease of and that
// was last used more than OrphanGrace ago. It takes the lease first, under
// a holder of its own (never this instance's sessions' holder), so the
// store refuses it while any instance, this one included, runs the
// session; and it closes the record under that lease. The sessions held
// here (Host.Held) are never touched.

const (
	// OrphanGrace is how long ago a temporary record must have been last
	// used (its create, or its last turn's end) before a sweep may close
	// it: a one-shot's record exists briefly between its create and its
	// process's lease, and an instance keeps a finished one-shot whose
	// answer nobody has collected for sessions.Config.DropAfter (15 min),
	// perhaps with its process (and lease) gone after an idle timeout.
	OrphanGrace = 20 * time.Minute
	// SweepEvery is how often the sweep runs while the server runs, after
	// the one at Start.
	SweepEvery = 5 * time.Minute
)

// sweepHolder names this instance's sweep in the leases it takes.
func (i *Instance) sweepHolder() string { return i.holder + "/sweep" }

// takesOver reports whether a lease that lapsed under holder lapsed is
// another instance's, taken over here: not one this instance let lapse
// itself, as its sessions' holder or as its sweep (a Release that
// failed).
func (i *Instance) takesOver(lapsed string) bool {
	return lapsed != "" && lapsed != i.holder && lapsed != i.sweepHolder()
}

// startSweep runs SweepOrphans now and every SweepEvery until Stop.
func (i *Instance) startSweep(h Host) {
	ctx, cancel := context.WithCancel(context.Background())
	i.stopSweep, i.sweepDone = cancel, make(chan struct{})
	go func() {
		defer close(i.sweepDone)
		t := time.NewTicker(SweepEvery)
		defer t.Stop()
		for {
			if _, err := i.SweepOrphans(ctx, h); err != nil && ctx.Err() == nil {
				i.cfg.Log.Warn("closing the one-shot queries' sessions that stopped instances left in the session store", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// SweepOrphans closes the temporary records that instances which died
// left open (see Orphans above), and returns how many it closed; h says
// which sessions are held here. Sweeps run one at a time.
func (i *Instance) SweepOrphans(ctx context.Context, h Host) (int, error) {
	if i.cfg.Store == nil {
		return 0, nil
	}
	i.sweepMu.Lock()
	defer i.sweepMu.Unlock()
	found, err := i.orphans(ctx, h)
	closed := 0
	for _, id := range found {
		ok, cerr := i.closeOrphan(ctx, id)
		if ok {
			closed++
		}
		err = errors.Join(err, cerr)
	}
	return closed, err
}

// orphans lists the ids of the temporary records not held here and last
// used more than OrphanGrace ago.
func (i *Instance) orphans(ctx context.Context, h Host) ([]string, error) {
	here := map[string]bool{}
	for _, id := range h.Held() {
		here[id] = true
	}
	i.mu.Lock()
	for id := range i.held {
		here[id] = true
	}
	i.mu.Unlock()
	var found []string
	q := store.Query{Temporary: true, Limit: store.MaxLimit}
	for {
		page, err := i.cfg.Store.List(ctx, q)
		if err != nil {
			return found, fmt.Errorf("listing the temporary sessions: %w", err)
		}
		for _, rec := range page.Records {
			if rec.Temporary && !here[rec.SessionID] && stale(rec) {
				found = append(found, rec.SessionID)
			}
		}
		if page.Next == "" {
			return found, nil
		}
		q.Cursor = page.Next
	}
}

// stale reports whether rec was last used more than OrphanGrace ago.
func stale(rec store.Record) bool { return time.Since(rec.LastUsed) > OrphanGrace }

// closeOrphan takes the lease on session id and closes it, unless another
// instance holds the lease (it runs the session) or the record is not an
// orphan any more (used again, or closed, meanwhile).
func (i *Instance) closeOrphan(ctx context.Context, id string) (bool, error) {
	l, lapsed, err := i.cfg.Store.Acquire(ctx, id, i.sweepHolder(), i.lease)
	switch {
	case errors.Is(err, store.ErrElsewhere), errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrClosed):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("taking the lease on session %s: %w", id, err)
	}
	if i.takesOver(lapsed) && i.cfg.OnTakeover != nil {
		i.cfg.OnTakeover() // the lease of a stopped instance, lapsed: a takeover like Acquire's
	}
	rec, err := i.cfg.Store.Get(ctx, id)
	if err == nil && (!rec.Temporary || !stale(rec)) {
		i.releaseSwept(l)
		return false, nil
	}
	if err == nil {
		err = i.cfg.Store.CloseSession(ctx, id, l)
	}
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrClosed):
		return false, nil
	case err != nil:
		i.releaseSwept(l)
		return false, fmt.Errorf("closing session %s: %w", id, err)
	}
	i.cfg.Log.Info("closed a one-shot query's session that a stopped instance left open in the session store", "session_id", id, "owner", rec.Owner, "last_used", rec.LastUsed)
	return true, nil
}

// releaseSwept gives up a lease the sweep took and did not close with.
func (i *Instance) releaseSwept(l store.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), i.lease)
	defer cancel()
	if err := i.cfg.Store.Release(ctx, l); err != nil && !errors.Is(err, store.ErrFenced) {
		i.cfg.Log.Warn("releasing the lease the sweep of orphaned sessions took", "session_id", l.ID, "err", err)
	}
}
