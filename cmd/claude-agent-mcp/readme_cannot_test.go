package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/e2eenv"
)

// TestWhatTheyCannot: every line of docs/security.md's "What they cannot"
// list (what a token holder cannot do) names the tests that hold it, and
// each named test exists (a subtest as Test/sub: its t.Run name in that file).
// A line that names none, or a test that was renamed or removed, fails.
func TestWhatTheyCannot(t *testing.T) {
	root, err := e2eenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(readme), "**What they cannot**")
	if !ok {
		t.Fatal(`docs/security.md has no "**What they cannot**" list`)
	}
	list, _, _ = strings.Cut(list, "\n\n")      // the sentence before the list
	_, list, _ = strings.Cut(list+"\n", "\n- ") // the list itself
	list, _, _ = strings.Cut("- "+list, "\n\n")
	lines := strings.Split(strings.TrimSpace(list), "\n")
	if len(lines) < 5 {
		t.Fatalf("the list has %d lines: %q", len(lines), list)
	}
	sources := map[string]string{} // test function name → its file's text
	funcRE := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".tools" || d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		for _, m := range funcRE.FindAllStringSubmatch(string(b), -1) {
			sources[m[1]] = string(b)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	testsRE := regexp.MustCompile(`\(tests: ([^)]+)\)`)
	for _, line := range lines {
		if !strings.HasPrefix(line, "- ") {
			t.Errorf("not a list line: %q", line)
			continue
		}
		m := testsRE.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("names no test: %q", line)
			continue
		}
		for _, name := range strings.Split(m[1], ", ") {
			fn, sub, _ := strings.Cut(name, "/")
			src, ok := sources[fn]
			switch {
			case !ok:
				t.Errorf("%s (named by %q) is no test", fn, line)
			case sub != "" && !strings.Contains(src, `t.Run("`+strings.ReplaceAll(sub, "_", " ")+`"`) && !strings.Contains(src, `t.Run("`+sub+`"`) && !strings.Contains(src, `{"`+strings.ReplaceAll(sub, "_", " ")+`"`):
				t.Errorf("%s has no subtest %q (named by %q)", fn, sub, line)
			}
		}
	}
}
