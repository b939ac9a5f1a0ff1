package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// The heap between turns: the server's live heap is a megabyte or two, and
// Go's default (GOGC=100) lets garbage grow to at least 4 MiB before a
// collection, which is most of the server's anonymous memory right after
// a burst of work (BENCHMARKS.md). A small heap is therefore collected at
// GOGC=50 (a 2 MiB floor: collections twice as often, each of a small
// heap); from smallHeap of live data on, the default 100 again, so that a
// turn with megabytes of text in flight is not collected more often than
// Go would. The live heap is read after every collection. GOGC or
// GOMEMLIMIT set in the environment leave the runtime as they say.

const (
	smallHeap      = 4 << 20
	smallHeapGOGC  = 50
	defaultGOGC    = 100
	liveHeapMetric = "/gc/heap/live:bytes"
)

// gcPercentFor is the GOGC for a live heap of live bytes.
func gcPercentFor(live uint64) int {
	if live < smallHeap {
		return smallHeapGOGC
	}
	return defaultGOGC
}

// tuneHeap starts the tuning unless the environment sets GOGC or
// GOMEMLIMIT. It runs for the life of the process.
func tuneHeap() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	t := &heapTuner{percent: defaultGOGC, sample: []metrics.Sample{liveSample()}}
	t.tune()
	t.arm()
}

func liveSample() metrics.Sample { return metrics.Sample{Name: liveHeapMetric} }

type heapTuner struct {
	percent int
	sample  []metrics.Sample
	stopped atomic.Bool // ends the tuning (tests)
}

// tune sets GOGC for the live heap as the last collection left it.
func (t *heapTuner) tune() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	if p := gcPercentFor(t.sample[0].Value.Uint64()); p != t.percent {
		t.percent = p
		debug.SetGCPercent(p)
	}
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
