package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// The heap between turns: the server's live heap is a megabyte or two, and
// Go's default (GOGC=100) lets garbage grow to at least 4 MiB before a
// collection, which is most of the server's anonymous memory right after
// a burst of work (BENCHMARKS.md). A small heap is therefore collected at
// GOGC=50 (a 2 MiB floor: collections twice as often, each of a small
// heap). From smallHeap of live data on, and for bigHeapHold after the
// last collection that found that much, it is the default 100 again: a
// turn with megabytes of text in flight, and the next one of a burst of
// them, is not collected more often than Go would. And from the moment
// work begins (sessions.Config.OnBusy) until the server is idle again
// (OnIdle) it is 100 whatever the heap: a 2 MB answer arriving on a small
// heap was collected twice as often in its first megabytes, which cost
// that turn about 6 % (BENCHMARKS.md). The live heap is read after every
// collection (the idle release forces one after a second without work).
// GOGC or GOMEMLIMIT set in the environment leave the runtime as they say.

const (
	smallHeap      = 4 << 20
	smallHeapGOGC  = 50
	defaultGOGC    = 100
	bigHeapHold    = time.Second
	liveHeapMetric = "/gc/heap/live:bytes"
)

// heapTuning is the process's tuner (nil when the environment sets GOGC
// or GOMEMLIMIT, or before tuneHeap).
var heapTuning *heapTuner

// tuneHeap starts the tuning unless the environment sets GOGC or
// GOMEMLIMIT. It runs for the life of the process.
func tuneHeap() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	t := newHeapTuner(time.Now)
	t.tune()
	t.arm()
	heapTuning = t
}

type heapTuner struct {
	now     func() time.Time
	sample  []metrics.Sample
	stopped atomic.Bool // ends the tuning (tests)

	mu      sync.Mutex // the collections' goroutine and the sessions' calls
	percent int
	lastBig time.Time // the last collection that left smallHeap or more live
	working bool      // between busy and idle
}

// busy says that work began (sessions.Config.OnBusy): GOGC 100 from now
// until idle.
func (t *heapTuner) busy() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.working = true
	t.set(defaultGOGC)
}

// idle says that the server has been idle for a while
// (sessions.Config.OnIdle): the next collection's live heap decides again.
func (t *heapTuner) idle() {
	t.mu.Lock()
	t.working = false
	t.mu.Unlock()
}

// follow has t told when the sessions of cfg begin work and when they are
// idle again (t nil: nothing).
func (t *heapTuner) follow(cfg *sessions.Config) {
	if t == nil {
		return
	}
	cfg.OnBusy = t.busy
	release := cfg.OnIdle
	cfg.OnIdle = func() {
		t.idle()
		if release != nil {
			release() // a collection: its live heap sets GOGC again
		}
	}
}

// set makes p the GOGC; t.mu is held.
func (t *heapTuner) set(p int) {
	if p != t.percent {
		t.percent = p
		debug.SetGCPercent(p)
	}
}

func newHeapTuner(now func() time.Time) *heapTuner {
	return &heapTuner{now: now, percent: defaultGOGC, sample: []metrics.Sample{{Name: liveHeapMetric}}}
}

// percentFor is the GOGC after a collection that left live bytes; t.mu
// is held.
func (t *heapTuner) percentFor(live uint64) int {
	now := t.now()
	if live >= smallHeap {
		t.lastBig = now
	}
	if t.working || !t.lastBig.IsZero() && now.Sub(t.lastBig) < bigHeapHold {
		return defaultGOGC
	}
	return smallHeapGOGC
}

// tune sets GOGC for the live heap as the last collection left it.
func (t *heapTuner) tune() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.set(t.percentFor(t.sample[0].Value.Uint64()))
}

// arm calls tune after the next collection: a cleanup runs once the
// object it watches is unreachable, which a collection finds out.
func (t *heapTuner) arm() {
	runtime.AddCleanup(new(gcTick), func(t *heapTuner) {
		if !t.stopped.Load() {
			t.tune()
			t.arm()
		}
	}, t)
}

// gcTick is the object whose collection marks a cycle's end; it has a size
// so that it is a heap object of its own (zero-size allocations share one
// address and are never collected).
type gcTick struct{ _ [32]byte }
