package main

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"
)

// TestHeapPercentFor: 50 for a small live heap, 100 for a big one and for
// bigHeapHold after the last big one.
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
	waitPercent := func(want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			runtime.GC()
			time.Sleep(10 * time.Millisecond) // the cleanup runs in its own goroutine
			got := debug.SetGCPercent(-1)
			debug.SetGCPercent(got)
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("GOGC = %d, want %d", got, want)
			}
		}
	}
	waitPercent(smallHeapGOGC)
	func() {
		big := make([]byte, 3*smallHeap)
		waitPercent(defaultGOGC)
		runtime.KeepAlive(big)
	}()
	offset.Add(int64(bigHeapHold))
	waitPercent(smallHeapGOGC)
}
