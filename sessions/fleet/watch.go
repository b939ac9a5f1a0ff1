package fleet

import (
	"context"
	"errors"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// Start watches the store for the changes other instances make: a session
// they closed is dropped here (h.Drop); after a resync (changes may have
// been missed) each held session is looked up again. It also starts the
// sweep of the one-shot queries' sessions that stopped instances left
// open (orphans.go): now, then every SweepEvery.
func (i *Instance) Start(h Host) {
	if i.cfg.Store == nil {
		return
	}
	i.startSweep(h)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := i.cfg.Store.Watch(ctx)
	if err != nil {
		cancel()
		i.cfg.Log.Error("watching the session store: sessions closed on other instances stay open here until used", "err", err)
		return
	}
	i.stopWatch, i.watchDone = cancel, make(chan struct{})
	go func() {
		defer close(i.watchDone)
		for c := range ch {
			switch c.Kind {
			case store.KindClosed:
				h.Drop(c.ID)
			case store.KindResync:
				i.resync(ctx, h)
			}
		}
	}()
}

// resync drops the held sessions the store no longer has open.
func (i *Instance) resync(ctx context.Context, h Host) {
	for _, id := range h.Held() {
		_, err := i.cfg.Store.Get(ctx, id)
		if errors.Is(err, store.ErrClosed) {
			h.Drop(id)
		}
	}
}

// Stop stops watching, the sweep and the renewals, giving up every lease
// held.
func (i *Instance) Stop() {
	if i.stopSweep != nil {
		i.stopSweep()
		<-i.sweepDone
	}
	if i.stopWatch != nil {
		i.stopWatch()
		<-i.watchDone
	}
	i.mu.Lock()
	ids := make([]string, 0, len(i.held))
	for id := range i.held {
		ids = append(ids, id)
	}
	i.mu.Unlock()
	for _, id := range ids {
		i.Release(id)
	}
}
