package main

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// TestHeapPercentFor: 50 for a small live heap, 100 for a big one, for
// bigHeapHold after the last big one, and while work runs.
func TestHeapPercentFor(t *testing.T) {
	clock := time.Unix(1000, 0)
	tuner := newHeapTuner(func() time.Time { return clock })
	for _, step := range []struct {
		advance time.Duration
		live    uint64
		want    int
	}{
		{0, 0, smallHeapGOGC},
		{0, 1 << 20, smallHeapGOGC},
		{0, smallHeap - 1, smallHeapGOGC},
		{0, smallHeap, defaultGOGC},
		{0, 64 << 20, defaultGOGC},
		{bigHeapHold / 2, 1 << 20, defaultGOGC},                  // within the hold
		{bigHeapHold/2 - time.Millisecond, 1 << 20, defaultGOGC}, // just before it ends
		{time.Millisecond, 1 << 20, smallHeapGOGC},               // bigHeapHold after the last big one
	} {
		clock = clock.Add(step.advance)
		if got := tuner.percentFor(step.live); got != step.want {
			t.Fatalf("+%v, live %d: GOGC %d, want %d", step.advance, step.live, got, step.want)
		}
	}
	tuner.working = true // between OnBusy and OnIdle: 100 on a small heap too
	if got := tuner.percentFor(1 << 20); got != defaultGOGC {
		t.Fatalf("during work, live 1 MiB: GOGC %d, want %d", got, defaultGOGC)
	}
}

// TestHeapTunerFollowsCollections: the tuner sets GOGC after a collection
// from the live heap it left: 50 for the test binary's small heap, 100
// while a large allocation is live, 50 again once it is gone and
// bigHeapHold has passed.
func TestHeapTunerFollowsCollections(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(defaultGOGC))
	var offset atomic.Int64 // added to the clock: skips the hold
	tuner := newHeapTuner(func() time.Time { return time.Now().Add(time.Duration(offset.Load())) })
	tuner.arm()
	defer tuner.stopped.Store(true)
	waitGCPercent(t, smallHeapGOGC)
	func() {
		big := make([]byte, 3*smallHeap)
		waitGCPercent(t, defaultGOGC)
		runtime.KeepAlive(big)
	}()
	offset.Add(int64(bigHeapHold))
	waitGCPercent(t, smallHeapGOGC)
}

// TestHeapTunerBusy: work beginning (OnBusy) sets GOGC 100 at once, on a
// small heap too, and collections keep it while the work lasts; once the
// server is idle (OnIdle, which collects) the small heap's 50 is back.
func TestHeapTunerBusy(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(defaultGOGC))
	tuner := newHeapTuner(time.Now)
	tuner.arm()
	defer tuner.stopped.Store(true)
	waitGCPercent(t, smallHeapGOGC)
	var cfg sessions.Config
	released := 0
	cfg.OnIdle = func() { released++; runtime.GC() }
	tuner.follow(&cfg)
	cfg.OnBusy()
	if got := gcPercent(); got != defaultGOGC {
		t.Fatalf("GOGC = %d once work began, want %d at once", got, defaultGOGC)
	}
	for range 3 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		if got := gcPercent(); got != defaultGOGC {
			t.Fatalf("GOGC = %d after a collection of a small heap during work, want %d", got, defaultGOGC)
		}
	}
	cfg.OnIdle()
	if released != 1 {
		t.Fatalf("the idle call ran the release %d times, want once", released)
	}
	waitGCPercent(t, smallHeapGOGC)
}

// gcPercent is the runtime's GOGC now.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// waitGCPercent collects until the tuner (run by a collection's cleanup,
// in a goroutine of its own) has set GOGC to want, for at most 10 s.
func waitGCPercent(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		if got := gcPercent(); got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC = %d, want %d", gcPercent(), want)
		}
	}
}
