package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, smallHeapGOGC},
		{1 << 20, smallHeapGOGC},
		{smallHeap - 1, smallHeapGOGC},
		{smallHeap, defaultGOGC},
		{64 << 20, defaultGOGC},
	} {
		if got := gcPercentFor(tc.live); got != tc.want {
			t.Errorf("gcPercentFor(%d) = %d, want %d", tc.live, got, tc.want)
		}
	}
}

// TestHeapTunerFollowsCollections: the tuner sets GOGC after a collection
// from the live heap it left: 50 for the test binary's small heap, 100
// while a large allocation is live, 50 again once it is gone.
func TestHeapTunerFollowsCollections(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(defaultGOGC))
	tuner := &heapTuner{percent: defaultGOGC, sample: []metrics.Sample{liveSample()}}
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
	waitPercent(smallHeapGOGC)
}
