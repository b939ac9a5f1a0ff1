package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// shownRunning is how many running tests a progress line names.
const shownRunning = 3

// tick, at now, says what is still running when nothing has been written
// for r.progress: a line per running package, or, when none runs, that go
// test is building. It then counts the silence from now again.
func (r *reporter) tick(now time.Time) {
	if r.progress <= 0 || now.Sub(r.lastOut) < r.progress {
		return
	}
	if len(r.pkgs) == 0 {
		fmt.Fprintf(r, "still running: go test is building (%d %s done, none running)\n", r.done, plural(r.done, "package"))
	}
	names := make([]string, 0, len(r.pkgs))
	for name := range r.pkgs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintln(r, r.pkgs[name].progress(now))
	}
	r.lastOut = now
}

// progress is the package's line for tick: how long it has run, how many
// tests ended, and the innermost tests that run now (not those paused).
func (p *pkg) progress(now time.Time) string {
	var running []string
	for _, t := range p.order {
		if t.done || t.paused {
			continue
		}
		inner := false
		for _, u := range p.order {
			if !u.done && !u.paused && strings.HasPrefix(u.name, t.name+"/") {
				inner = true
				break
			}
		}
		if !inner {
			running = append(running, t.name)
		}
	}
	line := fmt.Sprintf("still running: %s (%s, %d %s done, %d running", p.name,
		now.Sub(p.started).Round(time.Second), p.c.total(), plural(p.c.total(), "test"), len(running))
	if len(running) > shownRunning {
		running = append(running[:shownRunning], "…")
	}
	if len(running) > 0 {
		line += ": " + strings.Join(running, ", ")
	}
	return line + ")"
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
