package leakcheck

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordingTB is a testing.TB that records its failures instead of failing.
type recordingTB struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Error(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprint(args...))
}

func (r *recordingTB) Errorf(format string, args ...any) { r.Error(fmt.Sprintf(format, args...)) }

// blocked starts n goroutines that wait for the returned release.
func blocked(n int) (release func()) {
	stop := make(chan struct{})
	var started sync.WaitGroup
	for range n {
		started.Add(1)
		go func() {
			started.Done()
			<-stop
		}()
	}
	started.Wait()
	return func() { close(stop) }
}

// TestCheckDetects makes sure the check can fail: blocked goroutines and
// an open file are reported, readably, and nothing once they are gone.
func TestCheckDetects(t *testing.T) {
	s := TakeWithFDs()
	release := blocked(3)
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingTB{TB: t}
	r := s.Check(rec, 100*time.Millisecond)
	release()
	f.Close()
	if len(r.Leaked) != 3 || len(rec.errors) == 0 {
		t.Fatalf("three blocked goroutines: leaked %d, errors %q", len(r.Leaked), rec.errors)
	}
	report := rec.errors[0]
	for _, want := range []string{"3 goroutines leaked", "3 goroutines like this one (ids ", "blocked.func1", "[chan receive", "all goroutines:"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	if _, counted := openFDs(); counted && (len(rec.errors) != 2 || !strings.Contains(rec.errors[1], os.DevNull)) {
		t.Errorf("an open file was not reported: %q", rec.errors)
	}
	s.Check(t, 2*time.Second)
}

// TestCheckWaits: a goroutine that ends within the grace period is no
// leak; one that existed at the snapshot is none either.
func TestCheckWaits(t *testing.T) {
	releaseOld := blocked(1)
	defer releaseOld()
	s := Take()
	release := blocked(1)
	time.AfterFunc(200*time.Millisecond, release) // it ends while the check polls
	if r := s.Leaks(5 * time.Second); len(r.Problems) != 0 {
		t.Errorf("a goroutine that ended within the grace period was reported: %q", r.Problems)
	}
}

// TestShape: goroutines running the same code have the same shape.
func TestShape(t *testing.T) {
	a := "goroutine 12 [chan receive, 2 minutes]:\nexample.com/p.f(0xc000012345, {0x1, 0x2}, 0x0?)\n\t/src/p/f.go:10 +0x1f\ncreated by example.com/p.g in goroutine 7\n\t/src/p/g.go:5 +0x2a"
	b := "goroutine 99 [chan receive]:\nexample.com/p.f(0xc0000abcde, {0x3, 0x4}, 0x1?)\n\t/src/p/f.go:10 +0x1f\ncreated by example.com/p.g in goroutine 8\n\t/src/p/g.go:5 +0x2a"
	c := strings.Replace(b, "f.go:10", "f.go:11", 1)
	if shape(a) != shape(b) {
		t.Errorf("same code, different shapes:\n%s\n\n%s", shape(a), shape(b))
	}
	if shape(b) == shape(c) {
		t.Errorf("different lines, one shape:\n%s", shape(b))
	}
}

// TestCheckGone: a running process is reported, an ended one is not.
func TestCheckGone(t *testing.T) {
	if _, known := ProcessExists(os.Getpid()); !known {
		t.Skip("process existence cannot be told here")
	}
	rec := &recordingTB{TB: t}
	CheckGone(rec, os.Getpid())
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], fmt.Sprintf("process %d still exists", os.Getpid())) {
		t.Errorf("this process was not reported: %q", rec.errors)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	CheckGone(t, cmd.Process.Pid)
	CheckGroupGone(t, cmd.Process.Pid) // it had no group of its own
}
