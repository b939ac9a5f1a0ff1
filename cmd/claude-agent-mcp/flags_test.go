package main

import (
	"bufio"
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBadFlags: every flag and environment twin is checked before anything
// is served: a bad one exits 2 with one line naming it, and nothing reaches
// stdout.
func TestBadFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		env  string // NAME=value
		want string
	}{
		{args: []string{"--max-sessions", "0"}, want: "--max-sessions 0"},
		{args: []string{"--max-live", "-3"}, want: "--max-live -3"},
		{args: []string{"--max-queue", "0"}, want: "--max-queue 0"},
		{args: []string{"--idle-timeout", "-5s"}, want: "--idle-timeout -5s"},
		{args: []string{"--query-timeout", "-1s"}, want: "--query-timeout"},
		{args: []string{"--permission-timeout", "0s"}, want: "--permission-timeout"},
		{args: []string{"--heartbeat-interval", "0s"}, want: "--heartbeat-interval"},
		{args: []string{"--task-after", "0s"}, want: "--task-after"},
		{args: []string{"--task-ttl", "-1h"}, want: "--task-ttl"},
		{args: []string{"--max-depth", "-1"}, want: "--max-depth"},
		{args: []string{"--max-session-budget-usd", "-1"}, want: "--max-session-budget-usd"},
		{args: []string{"--max-total-budget-usd", "-0.5"}, want: "--max-total-budget-usd"},
		{args: []string{"--max-result-chars", "0"}, want: "--max-result-chars"},
		{args: []string{"--max-frame-bytes", "10"}, want: "--max-frame-bytes"},
		{args: []string{"--max-prompt-bytes", "99999999999"}, want: "--max-prompt-bytes"},
		{args: []string{"--permission-policy", "maybe"}, want: "--permission-policy maybe"},
		{args: []string{"--log-level", "loud"}, want: "--log-level"},
		{args: []string{"--allowed-permission-modes", "default,yolo"}, want: "--allowed-permission-modes yolo"},
		{args: []string{"--allowed-roots", "relative/dir"}, want: "--allowed-roots entry"},
		{args: []string{"--allowed-roots", file}, want: "is not a directory"},
		{args: []string{"--allowed-tools-ceiling", "Read,not a tool"}, want: "--allowed-tools-ceiling"},
		{args: []string{"--profiles", filepath.Join(t.TempDir(), "missing.json")}, want: "--profiles"},
		{args: []string{"--max-live", "many"}, want: "-max-live"},
		{args: []string{"--no-such-flag"}, want: "no-such-flag"},
		{args: []string{"stray"}, want: "unexpected arguments"},
		{env: "CLAUDE_AGENT_MCP_MAX_LIVE=-3", want: "--max-live -3"},
		{env: "CLAUDE_AGENT_MCP_MAX_LIVE=lots", want: "CLAUDE_AGENT_MCP_MAX_LIVE"},
		{env: "CLAUDE_AGENT_MCP_PERMISSION_POLICY=maybe", want: "--permission-policy maybe"},
	} {
		t.Run(strings.Join(append(tc.args, tc.env), " "), func(t *testing.T) {
			if tc.env != "" {
				k, v, _ := strings.Cut(tc.env, "=")
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			code := run(tc.args, strings.NewReader(""), &stdout, &stderr)
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if code != 2 || len(lines) != 1 || !strings.Contains(lines[0], tc.want) || !strings.HasPrefix(lines[0], "claude-agent-mcp: ") {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line naming %q", code, stderr.String(), tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q", stdout.String())
			}
		})
	}
}

// TestHelpNamesEnv: --help lists every flag with its environment twin.
func TestHelpNamesEnv(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--help"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, name := range []string{"max-live", "permission-policy", "task-after", "allowed-roots", "claude-path"} {
		if !strings.Contains(stderr.String(), "--"+name) || !strings.Contains(stderr.String(), "["+envName(name)+"]") {
			t.Errorf("--help lacks --%s with [%s]", name, envName(name))
		}
	}
	count := 0
	newFlagSet(&config{}).VisitAll(func(f *flag.Flag) {
		if !noEnvTwin[f.Name] {
			count++
		}
	})
	if got := strings.Count(stderr.String(), "[CLAUDE_AGENT_MCP_"); got != count {
		t.Errorf("--help names %d environment variables for %d flags", got, count)
	}
}

// TestCommandsHaveNoEnvTwin: --version is a command, not a setting: its
// would-be environment twin, left in a serving server's environment, must
// not make it print its version and exit. The server behaves as without
// the variable (here: a bad flag is still reported, exit 2, nothing on
// stdout).
func TestCommandsHaveNoEnvTwin(t *testing.T) {
	for name := range noEnvTwin {
		t.Run(name, func(t *testing.T) {
			t.Setenv(envName(name), "true")
			_, fs, err := parseFlags(nil)
			if err != nil {
				t.Fatalf("parseFlags: %v", err)
			}
			if f := fs.Lookup(name); f.Value.String() != f.DefValue {
				t.Errorf("%s=true set --%s to %s", envName(name), name, f.Value)
			}
			var stdout, stderr bytes.Buffer
			code := run([]string{"--max-live", "0"}, strings.NewReader(""), &stdout, &stderr)
			if code != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "--max-live 0") {
				t.Errorf("with %s=true: exit %d, stdout %q, stderr %q; want exit 2 naming --max-live and no stdout", envName(name), code, stdout.String(), stderr.String())
			}
		})
	}
}

// TestQuietCleanStop: at info the log holds the server's own lines only,
// and a clean stop logs no error; the CLI's version is logged once at start.
func TestQuietCleanStop(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "claude")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho '2.1.330 (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	log := startAndStop(t, fake)
	for _, bad := range []string{"ERR", "server run start", "server connecting", "run cancelled"} {
		if strings.Contains(log, bad) {
			t.Errorf("the log at info holds %q:\n%s", bad, log)
		}
	}
	for _, want := range []string{"claude CLI", "version=2.1.330", "survive a restart", "serving on stdio"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}

// TestCLICheckAtStart: a missing claude, or one older than the oldest
// supported version, is reported once at start with what to do — not only
// at the first call — and the server still serves.
func TestCLICheckAtStart(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "claude-old")
	if err := os.WriteFile(old, []byte("#!/bin/sh\necho '2.1.100 (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"missing", filepath.Join(dir, "no-such-claude"), []string{"WRN", "not usable", "no-such-claude", "npm install -g @anthropic-ai/claude-code"}},
		{"old", old, []string{"WRN", "older than the oldest version", "2.1.100", "2.1.197"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := startAndStop(t, tc.path, "--warm-spares", "0") // a spare would run the stand-in too
			for _, want := range tc.want {
				if !strings.Contains(log, want) {
					t.Errorf("the log lacks %q:\n%s", want, log)
				}
			}
			if n := strings.Count(log, "WRN"); n != 1 {
				t.Errorf("%d warnings, want one:\n%s", n, log)
			}
		})
	}
}

// startAndStop starts the built server with claude at claudePath, waits
// for its start-up line about the CLI, stops it cleanly (stdin EOF) and
// returns its stderr. args go to the server.
func startAndStop(t *testing.T, claudePath string, args ...string) string {
	t.Helper()
	bin := serverBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, append([]string{"--claude-path", claudePath, "--state-file", filepath.Join(dir, "state.json")}, args...)...)
	cmd.Dir = dir
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var log strings.Builder
	// The start-up check runs in the background: wait for its line, then
	// stop the server cleanly.
	timeout := time.After(10 * time.Second)
	for !strings.Contains(log.String(), "claude CLI") {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the server exited before its line about the claude CLI:\n%s", log.String())
			}
			log.WriteString(l + "\n")
		case <-timeout:
			_ = cmd.Process.Kill()
			t.Fatalf("no line about the claude CLI:\n%s", log.String())
		}
	}
	in.Close()
	for l := range lines {
		log.WriteString(l + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, log.String())
	}
	return log.String()
}
