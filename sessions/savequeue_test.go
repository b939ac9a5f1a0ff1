package sessions

import (
	"slices"
	"sync"
	"testing"
)

// TestOrderAndMerge: writes run in the order queued, those that wait while
// one runs are merged into one, and Now returns only once its own write
// (and every earlier one) is done.
func TestOrderAndMerge(t *testing.T) {
	var mu sync.Mutex
	var wrote [][]int
	block, entered := make(chan struct{}), make(chan struct{})
	first := true
	q := newSaveQueue(func(w []int) {
		if first {
			first = false
			close(entered)
			<-block // hold the first write while more are queued
		}
		mu.Lock()
		wrote = append(wrote, w)
		mu.Unlock()
	}, func(a, b []int) []int { return append(slices.Clone(a), b...) })

	done1 := q.Later([]int{1})
	<-entered
	q.Later([]int{2})
	q.Later([]int{3})
	select {
	case <-done1:
		t.Fatal("the first write reported done while it was held")
	default:
	}
	nowDone := make(chan struct{})
	go func() { q.Now([]int{4}); close(nowDone) }()
	select {
	case <-nowDone:
		t.Fatal("Now returned before its write")
	default:
	}
	close(block)
	<-nowDone
	mu.Lock()
	got := slices.Clone(wrote)
	mu.Unlock()
	// 1 alone; 2, 3 and 4 merged, unless Now's goroutine queued 4 after the
	// writer had taken 2 and 3 (then 4 alone). Either way in order.
	var flat []int
	for _, w := range got {
		flat = append(flat, w...)
	}
	if !slices.Equal(flat, []int{1, 2, 3, 4}) || len(got) < 2 || len(got) > 3 || !slices.Equal(got[0], []int{1}) {
		t.Fatalf("writes %v, want [1] then 2, 3, 4 in order, merged", got)
	}
	q.Wait() // nothing queued: returns at once
}

// TestWaitAfterLater: Wait returns once what was queued is written, also
// from many goroutines at once (run with -race).
func TestWaitAfterLater(t *testing.T) {
	var mu sync.Mutex
	sum := 0
	q := newSaveQueue(func(n int) { mu.Lock(); sum += n; mu.Unlock() }, func(a, b int) int { return a + b })
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() { q.Later(1); q.Wait() })
	}
	wg.Wait()
	q.Wait()
	mu.Lock()
	defer mu.Unlock()
	if sum != 50 {
		t.Fatalf("sum of the writes = %d, want 50", sum)
	}
}
