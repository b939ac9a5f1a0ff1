package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// streamed is run on pipes, with a clock and ticks the test sets: it writes
// events as go test would and reads the lines run writes. A read blocks until
// run writes, so the order of events, ticks and reads is the order the test
// gives.
type streamed struct {
	t     *testing.T
	in    *io.PipeWriter
	out   *bufio.Reader
	ticks chan time.Time
	t0    time.Time
	clock atomic.Int64 // nanoseconds since t0
	done  chan counts
}

func startStreamed(t *testing.T) *streamed {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &streamed{t: t, in: inW, out: bufio.NewReader(outR), ticks: make(chan time.Time),
		t0: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), done: make(chan counts, 1)}
	now := func() time.Time { return s.t0.Add(time.Duration(s.clock.Load())) }
	r := newReporter(outW, now, 30*time.Second)
	go func() {
		c, err := run(inR, r, s.ticks)
		if err != nil {
			t.Error(err)
		}
		outW.Close()
		s.done <- c
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return s
}

// at sets the clock to t0+d.
func (s *streamed) at(d time.Duration) { s.clock.Store(int64(d)) }

// events writes events, each "Action Package [Test]" or, for output,
// "output Package Test|- text".
func (s *streamed) events(lines ...string) {
	s.t.Helper()
	for _, l := range lines {
		f := strings.SplitN(l, " ", 4)
		e := fmt.Sprintf(`{"Action":%q,"Package":%q`, f[0], f[1])
		if len(f) > 2 && f[2] != "-" {
			e += fmt.Sprintf(`,"Test":%q`, f[2])
		}
		if len(f) > 3 {
			e += fmt.Sprintf(`,"Output":%q`, f[3]+"\n")
		}
		if _, err := io.WriteString(s.in, e+"}\n"); err != nil {
			s.t.Fatal(err)
		}
	}
}

// want reads the next line run writes.
func (s *streamed) want(line string) {
	s.t.Helper()
	got, err := s.out.ReadString('\n')
	if err != nil || got != line+"\n" {
		s.t.Fatalf("line %q, %v; want %q", got, err, line)
	}
}

// tick sets the clock to t0+d and sends that time; run has taken it when
// tick returns, and has written what it writes for it before it takes
// anything else.
func (s *streamed) tick(d time.Duration) {
	s.at(d)
	s.ticks <- s.t0.Add(d)
}

// TestProgress: a package's line shows when it ends, not when the stream
// does; after 30 s without output run says what still runs (the innermost
// running tests, not the paused ones), and again 30 s after that, not
// sooner.
func TestProgress(t *testing.T) {
	s := startStreamed(t)
	s.tick(29 * time.Second)
	s.tick(30 * time.Second) // nothing started yet
	s.want("still running: go test is building (0 packages done, none running)")
	s.at(35 * time.Second)
	s.events(
		"start a", "run a TestLong", "run a TestPar", "pause a TestPar",
		"run a TestQuick", "pass a TestQuick", "run a TestLong/sub", "run a TestLong/sub/inner",
		"pass a TestLong/sub/inner",
		"start b", "run b TestB", "pass b TestB", "output b - ok  \tb\t0.1s", "pass b",
	)
	// The old testreport buffered its output until the stream ended (or 4 KB).
	s.want("ok  \tb\t0.1s\t(1 passed)")
	s.tick(64 * time.Second) // 29 s after b's line: nothing
	s.tick(65 * time.Second)
	s.want("still running: a (30s, 2 tests done, 1 running: TestLong/sub)")
	s.at(70 * time.Second)
	s.events("pass a TestLong/sub", "cont a TestPar", "run a TestPar/x", "run a TestPar/y", "run a TestPar/z", "run a TestPar/w",
		"start c", "output c - ok  \tc\t0.1s", "pass c")
	s.want("ok  \tc\t0.1s")
	s.tick(99 * time.Second)
	s.tick(100 * time.Second)
	s.want("still running: a (1m5s, 3 tests done, 5 running: TestLong, TestPar/x, TestPar/y, …)")
	s.tick(129 * time.Second) // 29 s after the last progress line
	s.tick(130 * time.Second)
	s.want("still running: a (1m35s, 3 tests done, 5 running: TestLong, TestPar/x, TestPar/y, …)")
	s.in.Close()
	rest, err := io.ReadAll(s.out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--- FAIL: TestLong (did not finish)", "--- FAIL: TestPar (did not finish)", "    --- FAIL: TestPar/w (did not finish)"} {
		if !strings.Contains(string(rest), want) {
			t.Errorf("the end lacks %q:\n%s", want, rest)
		}
	}
	if strings.Contains(string(rest), "still running") {
		t.Errorf("a progress line at the end:\n%s", rest)
	}
	if c := <-s.done; c != (counts{passed: 4, failed: 6}) {
		t.Errorf("counts %v, want 4 passed, 6 failed; the end:\n%s", c, rest)
	}
}
