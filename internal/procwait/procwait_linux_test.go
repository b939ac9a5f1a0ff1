//go:build linux

package procwait

import (
	"os/exec"
	"runtime/pprof"
	"sync"
	"testing"
	"time"
)

// TestAwaitExitHoldsNoThread: twenty children waited for at once make the
// runtime start no thread for each (a blocking waitid would: Go keeps
// every thread it starts), and each wait ends when its child exits, the
// child still there to be reaped.
func TestAwaitExitHoldsNoThread(t *testing.T) {
	const n = 20
	threads := pprof.Lookup("threadcreate")
	before := threads.Count()
	var wg sync.WaitGroup
	for range n {
		cmd := exec.Command("sleep", "0.5")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			start := time.Now()
			if !AwaitExit(cmd.Process.Pid) {
				t.Error("AwaitExit: no pollable pidfd")
			}
			if d := time.Since(start); d < 300*time.Millisecond {
				t.Errorf("AwaitExit returned after %v, before the child's 0.5 s sleep ended", d)
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("reaping the child: %v", err)
			}
		})
	}
	wg.Wait()
	if grew := threads.Count() - before; grew >= n/2 {
		t.Errorf("%d threads started while %d children were waited for", grew, n)
	}
}
