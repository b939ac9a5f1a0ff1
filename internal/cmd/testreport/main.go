// Command testreport reads `go test -json` on stdin and writes what plain
// `go test` would: the output of failed tests (their subtests' nested under
// them), build errors, and a line per package; tests that never ended (a
// timeout's panic) are shown as failed with their output. scripts/test pipes
// every `go test` run through it.
//
// Usage:
//
//	go test -json ./... | testreport [-counts FILE]
//	testreport -summary FILE
//
// With -counts, the tests that passed, failed and were skipped are added to
// FILE (created when missing), so that several runs add up. -summary prints
// FILE's counts as one line, "N passed, N failed, N skipped". Tests and
// subtests are counted alike; a package that fails outside any test (a build
// error, a panic in TestMain) counts as one failure.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	counts := flag.String("counts", "", "add this run's counts to `file`")
	summary := flag.String("summary", "", "print the counts in `file` and exit")
	flag.Parse()
	if *summary != "" {
		c, err := readCounts(*summary)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(1)
		}
		fmt.Println(c)
		return
	}
	w := bufio.NewWriter(os.Stdout)
	c, err := report(os.Stdin, w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
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

func addCounts(file string, c counts) error {
	have, err := readCounts(file)
	if err != nil {
		return err
	}
	have.passed += c.passed
	have.failed += c.failed
	have.skipped += c.skipped
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
}

// pkg is the state of one package's run.
type pkg struct {
	tests   map[string]*test
	order   []*test         // by their start: parents before their subtests
	output  strings.Builder // the package's own output, shown at its end
	failing int             // tests that failed
}

// report renders the events on r to w and counts the tests.
func report(r io.Reader, w io.Writer) (counts, error) {
	var c counts
	pkgs := map[string]*pkg{}
	get := func(name string) *pkg {
		p := pkgs[name]
		if p == nil {
			p = &pkg{tests: map[string]*test{}}
			pkgs[name] = p
		}
		return p
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(w, sc.Text()) // not an event: pass it on
			continue
		}
		if e.Action == "build-output" {
			fmt.Fprint(w, e.Output)
			continue
		}
		p := get(e.Package)
		if e.Test == "" {
			switch e.Action {
			case "output":
				p.output.WriteString(e.Output)
			case "fail":
				unfinished := p.unfinished(w)
				c.failed += unfinished
				if p.failing+unfinished == 0 {
					c.failed++ // it failed outside any test
				}
				p.writeOutput(w)
				delete(pkgs, e.Package)
			case "pass", "skip":
				p.writeOutput(w)
				delete(pkgs, e.Package)
			}
			continue
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
		case "pass", "fail", "skip":
			t.done, t.failed = true, e.Action == "fail"
			switch e.Action {
			case "pass":
				c.passed++
			case "fail":
				c.failed++
				p.failing++
			case "skip":
				c.skipped++
			}
			if !strings.Contains(e.Test, "/") {
				p.topEnded(w, e.Test)
			}
		}
	}
	for _, p := range pkgs { // the stream ended early
		c.failed += p.unfinished(w)
		p.writeOutput(w)
	}
	return c, sc.Err()
}

// writeOutput writes, at the package's end, its own output (its ok or FAIL
// line, a panic outside tests) without the lines of -v mode that plain
// `go test` does not show.
func (p *pkg) writeOutput(w io.Writer) {
	for _, line := range strings.Split(p.output.String(), "\n") {
		if line != "PASS" && line != "testing: warning: no tests to run" && line != "" {
			fmt.Fprintln(w, line)
		}
	}
	p.output.Reset()
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
