package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGuideMap: CLAUDE.md's map has one line for every package of the
// module, and none for a package that is gone; every package has a doc
// that names it as its package clause does ("Package x …", "Command x …"
// for a main package); and the guide stays a map, under 300 lines.
func TestGuideMap(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile(filepath.Join(root, "CLAUDE.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(guide), "\n"); n >= 300 {
		t.Errorf("CLAUDE.md has %d lines, want under 300", n)
	}
	mapped := guideMap(t, string(guide))

	cmd := exec.Command("go", "list", "-json=ImportPath,Name,Doc,GoFiles", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/claude-agent-mcp/claude-agent-mcp/"
	dec := json.NewDecoder(strings.NewReader(string(out)))
	listed := map[string]bool{}
	for dec.More() {
		var p struct {
			ImportPath, Name, Doc string
			GoFiles               []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(p.ImportPath, module)
		listed[rel] = true
		if !mapped[rel] {
			t.Errorf("package %s has no line in CLAUDE.md's map", rel)
		}
		if len(p.GoFiles) == 0 {
			continue // tests only: its doc is in the test files
		}
		want := "Package " + p.Name + " "
		if p.Name == "main" {
			want = "Command " + filepath.Base(rel) + " "
		}
		if !strings.HasPrefix(p.Doc, want) {
			t.Errorf("package %s's doc starts %q, want %q", rel, p.Doc, want)
		}
	}
	for rel := range mapped {
		if !listed[rel] {
			t.Errorf("CLAUDE.md's map names %s, which go list does not know", rel)
		}
	}
}

// guideMap is the set of packages CLAUDE.md's "## Map" section has a line
// for ("- `path` — what it is"); a package named twice is an error.
func guideMap(t *testing.T, guide string) map[string]bool {
	t.Helper()
	line := regexp.MustCompile("^- `([a-z0-9_/-]+)` — \\S")
	mapped := map[string]bool{}
	in := false
	sc := bufio.NewScanner(strings.NewReader(guide))
	for sc.Scan() {
		text := sc.Text()
		if strings.HasPrefix(text, "## ") {
			in = text == "## Map"
			continue
		}
		if !in || !strings.HasPrefix(text, "- ") {
			continue
		}
		m := line.FindStringSubmatch(text)
		if m == nil {
			t.Errorf("CLAUDE.md's map has a line not of the form \"- `path` — what it is\": %s", text)
			continue
		}
		if mapped[m[1]] {
			t.Errorf("CLAUDE.md's map names %s twice", m[1])
		}
		mapped[m[1]] = true
	}
	if len(mapped) == 0 {
		t.Error("CLAUDE.md has no \"## Map\" section with lines")
	}
	return mapped
}
