package agentfile

import (
	"sync"
	"sync/atomic"
	"time"
)

// DefaultInterval is how often a [Watcher] rescans when not told.
const DefaultInterval = 2 * time.Second

// WatchOptions tune a [Watcher]. The zero value polls every
// DefaultInterval.
type WatchOptions struct {
	// Interval between scans; 0 is DefaultInterval.
	Interval time.Duration
	// Tick, when set, replaces the ticker: a scan runs at each value
	// received. Tests drive the watcher with it (or with Rescan).
	Tick <-chan time.Time
}

// A Watcher keeps the agents of a [Config] current by polling: at each
// tick it rescans the sources (listing the directories, and reading a file
// again only when its name, size or modification time changed, or when it
// was modified too recently for them to tell; see [Load]) and calls its
// callback with the new [Set] when the set, agents or warnings, differs
// from the last one. Polling works the same on every system and
// filesystem, network and container mounts included.
//
// A Watcher owns one goroutine, which runs the scans and the callback;
// Close ends it.
type Watcher struct {
	cfg      Config
	onChange func(*Set)

	mu sync.Mutex // serialises scans and callbacks
	sc *scanner

	cur       atomic.Pointer[Set]
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
	ticker    *time.Ticker // nil with WatchOptions.Tick
}

// NewWatcher scans the sources once, synchronously (the result is
// [Watcher.Set]; the callback is not called for it), then rescans at every
// tick. onChange is called with each new set, one call at a time, in the
// order of the scans; it must not call Close or Rescan (they wait for it).
func NewWatcher(cfg Config, opts WatchOptions, onChange func(*Set)) *Watcher {
	cfg.Dirs = append([]string(nil), cfg.Dirs...)
	cfg.Reserved = append([]string(nil), cfg.Reserved...)
	w := &Watcher{cfg: cfg, onChange: onChange, sc: newScanner(), done: make(chan struct{})}
	w.cur.Store(w.sc.scan(cfg))
	tick := opts.Tick
	if tick == nil {
		interval := opts.Interval
		if interval <= 0 {
			interval = DefaultInterval
		}
		w.ticker = time.NewTicker(interval)
		tick = w.ticker.C
	}
	w.wg.Add(1)
	go w.loop(tick)
	return w
}

func (w *Watcher) loop(tick <-chan time.Time) {
	defer w.wg.Done()
	for {
		select {
		case <-w.done:
			return
		case <-tick:
			w.Rescan()
		}
	}
}

// Set returns the current set. It may be called at any time, from the
// callback too.
func (w *Watcher) Set() *Set { return w.cur.Load() }

// Rescan scans now, calls the callback when the set changed, and reports
// whether it did; it waits for a scan in progress. After Close it does
// nothing and returns false.
func (w *Watcher) Rescan() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.done:
		return false
	default:
	}
	next := w.sc.scan(w.cfg)
	if next.Equal(w.cur.Load()) {
		return false
	}
	w.cur.Store(next)
	if w.onChange != nil {
		w.onChange(next)
	}
	return true
}

// Close stops the watcher and waits for its goroutine, and for a callback
// in progress, to end. It may be called more than once.
func (w *Watcher) Close() {
	w.closeOnce.Do(func() {
		close(w.done)
		if w.ticker != nil {
			w.ticker.Stop()
		}
	})
	w.wg.Wait()
}
