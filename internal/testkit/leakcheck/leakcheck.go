// Package leakcheck finds what a test left running: goroutines started
// since a snapshot (told apart by goroutine id, not by count, so that one
// that ends cannot hide a new one), optionally open file descriptors, and
// processes that should be gone. It is the one leak checker of the tests.
package leakcheck

import (
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Snapshot is what ran when it was taken.
type Snapshot struct {
	Goroutines int // runtime.NumGoroutine
	FDs        int // open file descriptors; 0 unless taken by TakeWithFDs where they can be counted
	stacks     map[string]string
	checkFDs   bool
}

// Take records the running goroutines.
func Take() Snapshot {
	return Snapshot{Goroutines: runtime.NumGoroutine(), stacks: goroutines()}
}

// TakeWithFDs also counts this process's open file descriptors (where the
// system can tell: /proc/self/fd or /dev/fd); a check then also fails when
// more are open. Take it after a warm-up: the runtime opens some once, on
// first use (the netpoller's).
func TakeWithFDs() Snapshot {
	s := Take()
	s.FDs, s.checkFDs = openFDs()
	return s
}

// Report is what a check found.
type Report struct {
	Goroutines int      // runtime.NumGoroutine at the end
	FDs        int      // open file descriptors at the end (with TakeWithFDs)
	Leaked     []string // the stacks of goroutines started since the snapshot and still running, sorted
	Problems   []string // one readable text per kind of leak; empty when nothing leaked
}

// Check fails tb with a readable report (tb.Error, one per kind of leak)
// unless every goroutine started since s has ended, and (with TakeWithFDs)
// no more descriptors are open than at s, within grace.
func (s Snapshot) Check(tb testing.TB, grace time.Duration) Report {
	tb.Helper()
	r := s.Leaks(grace)
	for _, p := range r.Problems {
		tb.Error(p)
	}
	return r
}

// Leaks is Check without a test: it polls until nothing is left or grace
// has passed and reports what is left then.
func (s Snapshot) Leaks(grace time.Duration) Report {
	deadline := time.Now().Add(grace)
	var r Report
	for {
		r = Report{Goroutines: runtime.NumGoroutine(), Leaked: s.newGoroutines()}
		r.FDs, _ = openFDs()
		fdsLeaked := s.checkFDs && r.FDs > s.FDs
		if len(r.Leaked) == 0 && !fdsLeaked {
			return r
		}
		if time.Now().After(deadline) {
			if len(r.Leaked) > 0 {
				r.Problems = append(r.Problems, s.goroutineReport(r))
			}
			if fdsLeaked {
				r.Problems = append(r.Problems, fmt.Sprintf("open file descriptors: %d, %d at the snapshot%s", r.FDs, s.FDs, fdList()))
			}
			return r
		}
		time.Sleep(20 * time.Millisecond) // polling: an exit cannot be awaited
	}
}

// newGoroutines returns the stacks of goroutines that are not in s, sorted,
// leaving out the runtime's and the test framework's.
func (s Snapshot) newGoroutines() []string {
	var added []string
	for id, st := range goroutines() {
		if _, old := s.stacks[id]; !old && !ignored(st) {
			added = append(added, st)
		}
	}
	slices.Sort(added)
	return added
}

// goroutineReport lists the leaked goroutines, those with the same stack
// once (with how many and their ids), then every goroutine (what the
// leaked ones wait for may be elsewhere).
func (s Snapshot) goroutineReport(r Report) string {
	type group struct {
		stack string
		ids   []string
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, st := range r.Leaked {
		k := shape(st)
		g := byKey[k]
		if g == nil {
			g = &group{stack: st}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.ids = append(g.ids, goroutineID(st))
	}
	slices.SortStableFunc(groups, func(a, b *group) int { return len(b.ids) - len(a.ids) })
	var b strings.Builder
	fmt.Fprintf(&b, "%d goroutines leaked (%d running, %d at the snapshot):\n", len(r.Leaked), r.Goroutines, s.Goroutines)
	for _, g := range groups {
		if len(g.ids) > 1 {
			fmt.Fprintf(&b, "\n%d goroutines like this one (ids %s):\n", len(g.ids), strings.Join(g.ids, ", "))
		} else {
			b.WriteString("\n")
		}
		b.WriteString(g.stack)
		b.WriteString("\n")
	}
	b.WriteString("\nall goroutines:\n\n")
	b.WriteString(Stacks())
	return b.String()
}

var (
	argsRE    = regexp.MustCompile(`\([0-9a-fx, .{}?]*\)$`)
	offsetRE  = regexp.MustCompile(` \+0x[0-9a-f]+$`)
	creatorRE = regexp.MustCompile(` in goroutine \d+$`)
)

// shape is a stack without what differs between goroutines running the
// same code: ids, wait times, argument values, pc offsets.
func shape(stack string) string {
	lines := strings.Split(stack, "\n")
	if len(lines) > 0 { // "goroutine 12 [chan receive, 2 minutes]:"
		state, _, _ := strings.Cut(lines[0], ",")
		_, state, _ = strings.Cut(state, "[")
		lines[0] = strings.TrimSuffix(state, "]:")
	}
	for i := 1; i < len(lines); i++ {
		l := argsRE.ReplaceAllString(lines[i], "(…)")
		l = offsetRE.ReplaceAllString(l, "")
		lines[i] = creatorRE.ReplaceAllString(l, "")
	}
	return strings.Join(lines, "\n")
}

func goroutineID(stack string) string {
	f := strings.Fields(stack)
	if len(f) >= 2 {
		return f[1]
	}
	return "?"
}

// ignored reports the goroutines of the runtime, the test framework and
// os/signal, which appear on their own (parallel subtests, fuzz workers, the
// signal loop).
func ignored(stack string) bool {
	_, rest, ok := strings.Cut(stack, "\n")
	if !ok {
		return true
	}
	for _, prefix := range []string{"testing.", "runtime.", "os/signal.", "internal/fuzz."} {
		if strings.HasPrefix(rest, prefix) {
			return true
		}
	}
	return false
}

// goroutines returns the stack of every goroutine, keyed by id.
func goroutines() map[string]string {
	out := map[string]string{}
	for _, g := range strings.Split(Stacks(), "\n\n") {
		g = strings.TrimRight(g, "\n")
		header, _, _ := strings.Cut(g, "\n")
		if f := strings.Fields(header); len(f) >= 2 && f[0] == "goroutine" { // "goroutine 12 [chan receive]:"
			out[f[1]] = g
		}
	}
	return out
}

// Stacks returns the stacks of all goroutines (for a report of a hang).
func Stacks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// CheckGone fails tb if process pid still exists (a zombie counts: it was
// not reaped), naming it from /proc where that exists. Where existence
// cannot be told (not unix) it checks nothing.
func CheckGone(tb testing.TB, pid int) {
	tb.Helper()
	if exists, known := ProcessExists(pid); known && exists {
		tb.Errorf("process %d still exists: %s", pid, describe(pid))
	}
}

// CheckGroupGone fails tb if process group pgid still has a member (unix;
// elsewhere it checks nothing).
func CheckGroupGone(tb testing.TB, pgid int) {
	tb.Helper()
	if exists, known := GroupExists(pgid); known && exists {
		tb.Errorf("process group %d still exists", pgid)
	}
}

// describe is a process's stat and command line from /proc, or "".
func describe(pid int) string {
	read := func(name string) string {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + name)
		return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	}
	return fmt.Sprintf("%s\n%.300s", read("stat"), read("cmdline"))
}
