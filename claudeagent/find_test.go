package claudeagent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
)

// Finding the CLI and asking it its version and auth status (find.go).

func TestFindCLI(t *testing.T) {
	const hint = "npm install -g @anthropic-ai/claude-code"
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope", "claude")
	_, err := FindCLI(missing)
	if !errors.Is(err, ErrCLINotFound) || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), hint) {
		t.Errorf("FindCLI(missing) = %v", err)
	}
	_, err = FindCLI(dir)
	if !errors.Is(err, ErrCLINotFound) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "directory") {
		t.Errorf("FindCLI(dir) = %v", err)
	}
	t.Setenv("PATH", dir)
	_, err = FindCLI("")
	if !errors.Is(err, ErrCLINotFound) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), hint) {
		t.Errorf("FindCLI(\"\") with an empty PATH = %v", err)
	}
	_, err = FindCLI("claude-custom-name")
	if !errors.Is(err, ErrCLINotFound) || !strings.Contains(err.Error(), "claude-custom-name") || !strings.Contains(err.Error(), hint) {
		t.Errorf("FindCLI(name) = %v", err)
	}
	if runtime.GOOS == "windows" {
		return
	}
	bin := filepath.Join(dir, "claude")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := FindCLI(""); err != nil || got != bin {
		t.Errorf("FindCLI on PATH = %q, %v", got, err)
	}
	if got, err := FindCLI(bin); err != nil || got != bin {
		t.Errorf("FindCLI(path) = %q, %v", got, err)
	}
	if _, err := Start(context.Background(), Options{Path: missing}); !errors.Is(err, ErrCLINotFound) {
		t.Errorf("Start with a missing CLI: %v", err)
	}
}

func TestFakeCLIVersion(t *testing.T) {
	t.Parallel()
	path, env := fakecli.Command(t)
	ctx := context.Background()
	v, err := CLIVersionEnv(ctx, path, env)
	if err != nil || v != "2.1.197" {
		t.Fatalf("CLIVersionEnv = %q, %v", v, err)
	}

	env["FAKE_CLAUDE_VERSION"] = "1.0.0"
	v, err = CLIVersionEnv(ctx, path, env)
	if err == nil || v != "1.0.0" {
		t.Fatalf("old CLI: %q, %v", v, err)
	}
	for _, want := range []string{path, "1.0.0", MinVersion, "npm install -g @anthropic-ai/claude-code"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}

	env["FAKE_CLAUDE_VERSION"] = "unknown"
	if _, err := CLIVersionEnv(ctx, path, env); err == nil || !strings.Contains(err.Error(), "no version") {
		t.Errorf("no version: %v", err)
	}

	env["FAKE_CLAUDE_VERSION"] = ""
	env["FAKE_CLAUDE_EXIT_EARLY"] = "1:boom"
	if _, err := CLIVersionEnv(ctx, path, env); err != nil {
		t.Errorf("--version is answered before the fault injection: %v", err)
	}
	if _, err := CLIVersionEnv(ctx, filepath.Join(t.TempDir(), "missing"), env); err == nil ||
		!strings.Contains(err.Error(), "npm install -g @anthropic-ai/claude-code") {
		t.Errorf("missing binary: %v", err)
	}
}

// TestCLIVersionEnvAllowList: CLIVersion runs the binary with the
// allow-list of the server's environment alone: a variable outside it
// (the fake's version) does not reach it, one given by CLIVersionEnv does.
func TestCLIVersionEnvAllowList(t *testing.T) {
	path, env := fakecli.Command(t)
	t.Setenv("FAKE_CLAUDE_VERSION", "1.9.9")
	if v, err := CLIVersionEnv(context.Background(), path, env); v != fakecli.DefaultVersion || err != nil {
		t.Errorf("CLIVersionEnv = %q, %v; want the fake's default %s: FAKE_CLAUDE_VERSION is no variable a CLI inherits", v, err, fakecli.DefaultVersion)
	}
	env["FAKE_CLAUDE_VERSION"] = "1.9.9"
	if v, err := CLIVersionEnv(context.Background(), path, env); v != "1.9.9" || err == nil {
		t.Errorf("CLIVersionEnv = %q, %v; want 1.9.9 and a too-old error", v, err)
	}
}

func TestParseAndCompareVersions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		out  string
		want string
		ok   bool
	}{
		{"2.1.197 (Claude Code)", "2.1.197", true},
		{"claude 10.20.30\n", "10.20.30", true},
		{"1.2", "", false},
		{"", "", false},
	} {
		got, ok := ParseVersion(tc.out)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseVersion(%q) = %q, %v", tc.out, got, ok)
		}
	}
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"2.1.197", "2.0.0", 1}, {"2.0.0", "2.0.0", 0}, {"1.99.99", "2.0.0", -1},
		{"2.10.0", "2.9.0", 1}, {"2.1.9", "2.1.10", -1},
	} {
		if got := CompareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareVersions(%s, %s) = %d", tc.a, tc.b, got)
		}
	}
}

// TestFakeCLIAuthStatus: CLIAuthStatus reads `auth status` logged in, not
// logged in (exit 1, the status still printed), and fails on a CLI that
// prints no status.
func TestFakeCLIAuthStatus(t *testing.T) {
	t.Parallel()
	path, env := fakecli.Command(t)
	ctx := context.Background()
	st, err := CLIAuthStatus(ctx, path, env)
	if err != nil || st != (AuthStatus{LoggedIn: true, AuthMethod: "api_key", APIProvider: "firstParty"}) {
		t.Errorf("logged in: %+v, %v", st, err)
	}
	env[fakecli.EnvNotLoggedIn] = "1"
	st, err = CLIAuthStatus(ctx, path, env)
	if err != nil || st != (AuthStatus{LoggedIn: false, AuthMethod: "none", APIProvider: "firstParty"}) {
		t.Errorf("not logged in: %+v, %v", st, err)
	}
	if runtime.GOOS == "windows" {
		return
	}
	script := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho '2.1.330 (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if st, err := CLIAuthStatus(ctx, script, nil); err == nil || !strings.Contains(err.Error(), "auth status") || !strings.Contains(err.Error(), "2.1.330 (Claude Code)") {
		t.Errorf("no status: %+v, %v; want an error naming the command and what it printed", st, err)
	}
	// A CLI that never answers is killed when ctx ends.
	hang := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(hang, []byte("#!/bin/sh\nexec sleep 90\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if st, err := CLIAuthStatus(short, hang, nil); err == nil {
		t.Errorf("a hanging CLI: %+v", st)
	}
	if d := time.Since(start); d > time.Minute { // the CLI sleeps 90 s
		t.Errorf("a hanging CLI held CLIAuthStatus for %s after its context ended", d)
	}
}
