package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPool pools two reports: the ratio of the pooled p50s, the median of
// the per-round ratios and each report's ratio; a ratio whose figures only
// one report has pools that one alone; lines that are not samples of a
// known figure are ignored.
func TestPool(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	one := write("one.md", "### a report\n\n- The spares server after the rounds: VmRSS 26.5 MiB.\n\nRaw samples (ms, in round order):\n\n"+
		"- chat_server: 10.0 20.0 30.0\n- chat_cli: 10.0 10.0 10.0\n- chat_alt: 5.0 10.0 15.0\n")
	two := write("two.md", "Raw samples (ms, in round order):\n\n- chat_server: 40.0 50.0 60.0\n- chat_cli: 20.0 20.0 20.0\n- unknown_figure: 1.0\n")
	var out strings.Builder
	if err := pool(&out, []string{one, two}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"2 reports pooled.",
		// chat_server pooled 10..60: p50 (nearest rank, 3rd of 6) 30; chat_cli 10,10,10,20,20,20: 10.
		// Per-round ratios 1, 2, 3, 2, 2.5, 3: the 3rd of 6 sorted is 2.
		"| warm chat query: server / CLI direct | 30.0 ms / 10.0 ms = 3.000 | 2.000 | 6 | 2.000, 2.500 | ≤ 1.10 | **no** |",
		// chat_alt is in the first report only: 10 over its chat_server's 20.
		"| warm chat query: -alt-server / server | 10.0 ms / 20.0 ms = 0.500 | 0.500 | 3 | 0.500 | — |  |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the pooled table lacks\n%s\nin\n%s", want, got)
		}
	}
	if strings.Contains(got, "2 MB answer") {
		t.Errorf("a ratio of figures no report has is listed:\n%s", got)
	}
}

// TestPoolRefuses: no reports, a report without samples, a sample that is
// not a number.
func TestPoolRefuses(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.md")
	bad := filepath.Join(dir, "bad.md")
	if err := os.WriteFile(empty, []byte("# nothing timed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("- chat_cli: 1.0 x2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		paths []string
		want  string
	}{
		{nil, "needs the bench reports"},
		{[]string{empty}, "no raw samples"},
		{[]string{bad}, `"x2" is not a number`},
		{[]string{filepath.Join(dir, "missing.md")}, "no such file"},
	} {
		var out strings.Builder
		err := pool(&out, c.paths)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("pool(%q) = %v, want an error saying %q", c.paths, err, c.want)
		}
	}
}
