package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestPrintSetup: --print-setup prints, on stdout, the claude mcp add line
// at user scope with this binary's absolute path, the .mcp.json entry, and
// why; then exits 0 without serving.
func TestPrintSetup(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--print-setup"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		t.Fatal(err)
	}
	checkSetup(t, stdout.String(), exe)
	// A test binary that go test built is a go-build one, like go run's:
	// the note says to install first.
	if strings.Contains(exe, "go-build") != strings.Contains(stderr.String(), "go install") {
		t.Errorf("binary %s, stderr %q: the note on a temporary go build is wrong", exe, stderr.String())
	}
}

// TestPrintSetupUI: the flags beside --print-setup are registered with the
// server (the dashboard on: --ui on, in either spelling); without --ui the
// output says how to have it.
func TestPrintSetupUI(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args, want []string
		hint       bool
	}{
		{[]string{"--print-setup"}, nil, true},
		{[]string{"--ui", "on", "--print-setup"}, []string{"--ui", "on"}, false},
		{[]string{"-print-setup=true", "--ui=127.0.0.1:8790", "--max-live", "3"}, []string{"--ui=127.0.0.1:8790", "--max-live", "3"}, false},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", tc.args, code, stderr.String())
		}
		checkSetup(t, stdout.String(), exe, tc.want...)
		if hint := strings.Contains(stdout.String(), "--print-setup --ui on"); hint != tc.hint {
			t.Errorf("%v: the hint to add --ui on is there: %v, want %v:\n%s", tc.args, hint, tc.hint, stdout.String())
		}
	}
}

// TestPrintSetupSymlink: run through a symlink (as from a bin directory),
// the setup names the binary itself, absolute, quoted for the shell when
// its path needs it. (On Linux os.Executable already resolves symlinks,
// through /proc/self/exe; elsewhere printSetup's EvalSymlinks does.)
func TestPrintSetupSymlink(t *testing.T) {
	bin := serverBinary(t)
	dir := filepath.Join(t.TempDir(), "my bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A copy under a path with a space, reached through a relative symlink.
	real := filepath.Join(dir, "claude agent's server")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, data, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Base(real), link); err != nil {
		t.Fatal(err)
	}
	want, err := filepath.EvalSymlinks(real)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, "--print-setup")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr %q", stderr.String())
	}
	checkSetup(t, string(out), want)
	if !strings.Contains(string(out), `'`+strings.ReplaceAll(want, `'`, `'\''`)+`'`) {
		t.Errorf("the path is not shell-quoted:\n%s", out)
	}
}

// checkSetup checks a --print-setup output for the binary exe.
// Its args are the flags the server is registered with.
func checkSetup(t *testing.T, out, exe string, args ...string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	if want := strings.Join(append([]string{"claude mcp add --scope user claude-agent --", shellQuote(exe)}, args...), " "); lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	var entry, found any
	if args == nil {
		args = []string{}
	}
	if err := json.Unmarshal([]byte(`{"mcpServers":{"claude-agent":{"command":`+jsonQuote(t, exe)+`,"args":`+jsonQuote(t, args)+`}}}`), &entry); err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "{") {
			if err := json.Unmarshal([]byte(l), &found); err != nil {
				t.Errorf("the .mcp.json line %q: %v", l, err)
			}
		}
	}
	if !reflect.DeepEqual(found, entry) {
		t.Errorf("the .mcp.json entry is %v, want %v:\n%s", found, entry, out)
	}
	for _, want := range []string{"local scope", "only works in the directory it was added from", "PATH"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output does not say why (%q):\n%s", want, out)
		}
	}
}

func jsonQuote(t *testing.T, s any) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestShellQuote: paths are quoted only when needed, and a quoted one reads
// back the same in sh.
func TestShellQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/home/me/go/bin/claude-agent-mcp", "/home/me/go/bin/claude-agent-mcp"},
		{"/opt/x_1.2/bin@v+1=a,b:c%d", "/opt/x_1.2/bin@v+1=a,b:c%d"},
		{"/Users/me/My Tools/claude-agent-mcp", "'/Users/me/My Tools/claude-agent-mcp'"},
		{"/tmp/it's", `'/tmp/it'\''s'`},
		{"/tmp/$HOME;rm", "'/tmp/$HOME;rm'"},
		{"", "''"},
	} {
		got := shellQuote(tc.in)
		if got != tc.want {
			t.Errorf("shellQuote(%q) = %s, want %s", tc.in, got, tc.want)
		}
		out, err := exec.Command("sh", "-c", "printf %s "+got).Output()
		if err != nil || string(out) != tc.in {
			t.Errorf("sh reads %s as %q (%v), want %q", got, out, err, tc.in)
		}
	}
}
