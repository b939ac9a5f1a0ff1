// Command testreport reads `go test -json` on stdin and writes what plain
// `go test` would, as the events arrive: the output of failed tests (their
// subtests' nested under them), build errors, and a line per package when it
// ends, with its counts ("ok  \tpkg\t1.2s\t(12 passed; 1 skipped)"); tests
// that never ended (a timeout's panic) are shown as failed with their output.
// While a package runs and nothing has been written for -progress (30s), it
// writes what is still running, again after each further -progress:
//
//	still running: example.com/pkg (4m30s, 12 tests done, 2 running: TestA/sub, TestB)
//
// scripts/test pipes every `go test` run through it.
//
// Usage:
//
//	go test -json ./... | testreport [-counts FILE] [-progress 30s]
//	testreport -summary FILE [FILE...]
//
// With -counts, the tests that passed, failed and were skipped are added to
// FILE (created when missing), so that several runs add up. -summary prints
// the sum of the FILEs' counts as one line, "N passed, N failed, N skipped".
// Tests and subtests are counted alike; a package that fails outside any
// test (a build error, a panic in TestMain) counts as one failure.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

func main() {
	counts := flag.String("counts", "", "add this run's counts to `file`")
	summary := flag.String("summary", "", "print the counts in `file` and exit")
	progress := flag.Duration("progress", 30*time.Second, "after this long without output, say what is still running (0: never)")
	flag.Parse()
	if *summary != "" {
		c, err := sumCounts(append([]string{*summary}, flag.Args()...))
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(1)
		}
		fmt.Println(c)
		return
	}
	var ticks <-chan time.Time
	if *progress > 0 {
		t := time.NewTicker(min(*progress, 5*time.Second))
		defer t.Stop()
		ticks = t.C
	}
	// Unbuffered: each line shows as soon as its package ends.
	r := newReporter(os.Stdout, time.Now, *progress)
	c, err := run(os.Stdin, r, ticks)
	if err == nil && *counts != "" {
		err = addCounts(*counts, c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
}

// counts are the tests of one or more runs.
type counts struct{ passed, failed, skipped int }

func (c counts) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", c.passed, c.failed, c.skipped)
}

// short is c for a package's line: the parts that are not zero, apart by
// semicolons, so that no line but the closing one reads "N passed, N
// failed, N skipped".
func (c counts) short() string {
	var parts []string
	for _, p := range []struct {
		n    int
		word string
	}{{c.passed, "passed"}, {c.failed, "failed"}, {c.skipped, "skipped"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.word))
		}
	}
	return strings.Join(parts, "; ")
}

func (c counts) total() int { return c.passed + c.failed + c.skipped }

func readCounts(file string) (counts, error) {
	var c counts
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	if _, err := fmt.Sscanf(string(b), "%d passed, %d failed, %d skipped", &c.passed, &c.failed, &c.skipped); err != nil {
		return c, fmt.Errorf("reading counts from %s: %w", file, err)
	}
	return c, nil
}

// sumCounts adds up the counts in files (a missing one counts none).
func sumCounts(files []string) (counts, error) {
	var sum counts
	for _, file := range files {
		c, err := readCounts(file)
		if err != nil {
			return sum, err
		}
		sum.add(c)
	}
	return sum, nil
}

func (c *counts) add(d counts) {
	c.passed += d.passed
	c.failed += d.failed
	c.skipped += d.skipped
}

func addCounts(file string, c counts) error {
	have, err := readCounts(file)
	if err != nil {
		return err
	}
	have.add(c)
	return os.WriteFile(file, []byte(have.String()+"\n"), 0o644)
}

// event is one line of `go test -json` (see `go doc test2json`, `go help
// buildjson`).
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	FailedBuild string
}

// test is the output of one running or ended test.
type test struct {
	name   string
	output strings.Builder
	done   bool
	failed bool
	paused bool // a parallel test waiting for its turn
}

// pkg is the state of one package's run.
type pkg struct {
	name    string
	started time.Time
	tests   map[string]*test
	order   []*test         // by their start: parents before their subtests
	output  strings.Builder // the package's own output, shown at its end
	c       counts          // its tests so far
}

// reporter renders the events of one `go test -json` run and counts its
// tests. Everything it shows goes through its Write, which notes when it
// last wrote.
type reporter struct {
	out      io.Writer
	now      func() time.Time
	progress time.Duration // the silence after which tick says what runs; 0: never
	lastOut  time.Time
	pkgs     map[string]*pkg
	done     int // packages that ended
	c        counts
}

func newReporter(out io.Writer, now func() time.Time, progress time.Duration) *reporter {
	return &reporter{out: out, now: now, progress: progress, lastOut: now(), pkgs: map[string]*pkg{}}
}

func (r *reporter) Write(b []byte) (int, error) {
	r.lastOut = r.now()
	return r.out.Write(b)
}

// report renders the events on in to w and counts the tests.
func report(in io.Reader, w io.Writer) (counts, error) {
	return run(in, newReporter(w, time.Now, 0), nil)
}

// run feeds r the lines of in as they arrive, and ticks's times, until in
// ends.
func run(in io.Reader, r *reporter, ticks <-chan time.Time) (counts, error) {
	lines := make(chan []byte)
	errc := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			lines <- bytes.Clone(sc.Bytes())
		}
		errc <- sc.Err()
		close(lines)
	}()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				for _, p := range r.pkgs { // the stream ended early
					p.c.failed += p.unfinished(r)
					r.ended(p)
				}
				return r.c, <-errc
			}
			r.line(line)
		case now := <-ticks:
			r.tick(now)
		}
	}
}

// line handles one line of the stream.
func (r *reporter) line(line []byte) {
	var e event
	if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
		fmt.Fprintf(r, "%s\n", line) // not an event: pass it on
		return
	}
	if e.Action == "build-output" {
		fmt.Fprint(r, e.Output)
		return
	}
	p := r.pkgs[e.Package]
	if p == nil {
		p = &pkg{name: e.Package, started: r.now(), tests: map[string]*test{}}
		r.pkgs[e.Package] = p
	}
	if e.Test == "" {
		r.pkgEvent(p, e)
		return
	}
	t := p.tests[e.Test]
	if t == nil {
		t = &test{name: e.Test}
		p.tests[e.Test] = t
		p.order = append(p.order, t)
	}
	switch e.Action {
	case "output":
		t.output.WriteString(e.Output)
	case "pause":
		t.paused = true
	case "cont", "run":
		t.paused = false
	case "pass", "fail", "skip":
		t.done, t.failed = true, e.Action == "fail"
		switch e.Action {
		case "pass":
			p.c.passed++
		case "fail":
			p.c.failed++
		case "skip":
			p.c.skipped++
		}
		if !strings.Contains(e.Test, "/") {
			p.topEnded(r, e.Test)
		}
	}
}

// pkgEvent handles an event of the package itself, not of one of its tests.
func (r *reporter) pkgEvent(p *pkg, e event) {
	switch e.Action {
	case "output":
		p.output.WriteString(e.Output)
	case "fail":
		p.c.failed += p.unfinished(r)
		if p.c.failed == 0 {
			p.c.failed++ // it failed outside any test
		}
		r.ended(p)
	case "pass", "skip":
		r.ended(p)
	}
}

// ended writes the package's own output, adds its counts and forgets it.
func (r *reporter) ended(p *pkg) {
	p.writeOutput(r)
	r.c.add(p.c)
	delete(r.pkgs, p.name)
	r.done++
}

// writeOutput writes, at the package's end, its own output (its ok or FAIL
// line, with its counts added, a panic outside tests) without the lines of
// -v mode that plain `go test` does not show.
func (p *pkg) writeOutput(w io.Writer) {
	for _, line := range strings.Split(p.output.String(), "\n") {
		if line == "PASS" || line == "testing: warning: no tests to run" || line == "" {
			continue
		}
		if p.c.total() > 0 && (p.resultLine(line, "ok  \t") || p.resultLine(line, "FAIL\t")) {
			line += "\t(" + p.c.short() + ")"
		}
		fmt.Fprintln(w, line)
	}
	p.output.Reset()
}

// resultLine reports whether line is go test's result line for the
// package: "ok  \tpkg\t1.2s", "FAIL\tpkg [build failed]".
func (p *pkg) resultLine(line, prefix string) bool {
	rest, ok := strings.CutPrefix(line, prefix+p.name)
	return ok && (rest == "" || rest[0] == '\t' || rest[0] == ' ')
}

// topEnded writes the failures under the top-level test name, which has
// just ended, and forgets its tests.
func (p *pkg) topEnded(w io.Writer, name string) {
	kept := p.order[:0]
	for _, t := range p.order {
		if t.name != name && !strings.HasPrefix(t.name, name+"/") {
			kept = append(kept, t)
			continue
		}
		if t.failed {
			t.write(w, "")
		}
		delete(p.tests, t.name)
	}
	p.order = kept
}

// unfinished writes the tests that never ended (the package panicked or
// timed out while they ran) as failed, and returns how many there were.
func (p *pkg) unfinished(w io.Writer) int {
	n := 0
	for _, t := range p.order {
		switch {
		case !t.done:
			n++
			t.write(w, " (did not finish)")
		case t.failed:
			t.write(w, "")
		}
	}
	p.order, p.tests = nil, map[string]*test{}
	return n
}

// write writes a failed test as plain `go test` does: its result line, then
// its output, indented by its depth.
func (t *test) write(w io.Writer, note string) {
	indent := strings.Repeat("    ", strings.Count(t.name, "/"))
	head := "--- FAIL: " + t.name + note
	var body []string
	for _, line := range strings.Split(strings.TrimRight(t.output.String(), "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "--- FAIL: "+t.name+" "):
			head = line
		case strings.HasPrefix(line, "=== "): // RUN, PAUSE, CONT, NAME
		default:
			body = append(body, line)
		}
	}
	fmt.Fprintln(w, indent+head)
	for _, line := range body {
		if line != "" {
			line = indent + line
		}
		fmt.Fprintln(w, line)
	}
}
