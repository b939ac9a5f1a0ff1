package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReport runs `go test -json` on testdata/sample (a module of its own:
// passing, failing, skipped and parallel tests, nested subtests, a package
// that does not build and one whose test hangs until -timeout) and checks
// the report: what plain go test shows, in its order, and the counts.
func TestReport(t *testing.T) {
	cmd := exec.Command("go", "test", "-json", "-count=1", "-timeout", "5s", "./...")
	cmd.Dir = filepath.Join("testdata", "sample")
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	events, err := cmd.Output()
	if err == nil {
		t.Fatal("go test of the sample passed; it must fail")
	}
	var out bytes.Buffer
	c, err := report(bytes.NewReader(events), &out)
	if err != nil {
		t.Fatal(err)
	}
	if want := (counts{passed: 5, failed: 7, skipped: 3}); c != want {
		// pass: TestPass, TestSubs/ok, TestParallel2, pass.TestPass, hang.TestOK;
		// fail: TestFail, TestSubs, TestSubs/bad, TestSubs/bad/deeper,
		// TestParallel1, the build, TestHang; skip: TestSkip, TestSubs/skipped,
		// pass.TestSkip.
		t.Errorf("counts %v, want %v\n%s", c, want, out.String())
	}
	text := out.String()
	// In this order within each package (packages may come in any order).
	for _, seq := range [][]string{
		{"--- FAIL: TestFail (", "printed by TestFail", "    fail_test.go:12: TestFail failed"},
		{"--- FAIL: TestSubs (", "    fail_test.go:18: the parent's log",
			// A test's own output comes before its subtests'.
			"\n    --- FAIL: TestSubs/bad (", "\n        fail_test.go:21: the subtest's log",
			"\n        fail_test.go:23: bad failed",
			"\n        --- FAIL: TestSubs/bad/deeper (", "\n            fail_test.go:22: deeper failed"},
		// A package's line ends with its counts.
		{"--- FAIL: TestParallel1 (", "    fail_test.go:30: TestParallel1 failed", "\nFAIL\tsample/fail\t", "s\t(3 passed; 5 failed; 2 skipped)\n"},
		{"# sample/build", "undefined: undefinedFunction", "FAIL\tsample/build [build failed]\t(1 failed)\n"},
		{"--- FAIL: TestHang (did not finish)", "    hang_test.go:11: before the hang", "panic: test timed out after 5s", "FAIL\tsample/hang\t", "s\t(1 passed; 1 failed)\n"},
		{"ok  \tsample/pass\t", "s\t(1 passed; 1 skipped)\n"},
	} {
		rest := text
		for _, want := range seq {
			i := strings.Index(rest, want)
			if i < 0 {
				t.Errorf("the report lacks %q (after %q):\n%s", want, seq[0], text)
				break
			}
			rest = rest[i+len(want):]
		}
	}
	// CI reads the closing "N passed, N failed, N skipped" line: no package's
	// line may read like it.
	if m := regexp.MustCompile(`\d+ passed, \d+ failed, \d+ skipped`).FindString(text); m != "" {
		t.Errorf("the report has %q, like the closing line:\n%s", m, text)
	}
	for _, hidden := range []string{"not shown", "=== RUN", "=== PAUSE", "=== CONT", "--- PASS", "--- SKIP", "\nPASS\n"} {
		if strings.Contains(text, hidden) {
			t.Errorf("the report shows %q:\n%s", hidden, text)
		}
	}
}

// TestReportPassesOtherLines: lines that are not test events (a go command
// error) are passed on.
func TestReportPassesOtherLines(t *testing.T) {
	var out bytes.Buffer
	in := "go: warning: something\n" + `{"Action":"start","Package":"p"}` + "\n" +
		`{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}` + "\n" + `{"Action":"pass","Package":"p"}` + "\n"
	if _, err := report(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "go: warning: something\nok  \tp\t0.1s\n" {
		t.Errorf("report = %q", out.String())
	}
}

// TestCounts: counts add up across runs in the file and across files, and
// -summary's line is exactly "N passed, N failed, N skipped".
func TestCounts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "counts")
	if c, err := readCounts(file); err != nil || c != (counts{}) {
		t.Fatalf("a missing file: %v, %v", c, err)
	}
	for _, c := range []counts{{3, 1, 2}, {10, 0, 1}} {
		if err := addCounts(file, c); err != nil {
			t.Fatal(err)
		}
	}
	c, err := readCounts(file)
	if err != nil || c.String() != "13 passed, 1 failed, 3 skipped" {
		t.Errorf("counts %q, %v; want 13 passed, 1 failed, 3 skipped", c, err)
	}
	other := filepath.Join(t.TempDir(), "other")
	if err := addCounts(other, counts{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	sum, err := sumCounts([]string{file, other, filepath.Join(t.TempDir(), "missing")})
	if err != nil || sum != (counts{14, 3, 6}) {
		t.Errorf("sum %v, %v; want 14 passed, 3 failed, 6 skipped", sum, err)
	}
	if err := os.WriteFile(file, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readCounts(file); err == nil {
		t.Error("garbage read as counts")
	}
}
