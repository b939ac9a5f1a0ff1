//go:build linux

package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/ceiling"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
)

// A session is a tenant (issue 43): these run the attacks of a hostile
// token holder against the built server and the real CLI, each of which at
// 73d8d45 reached something of the server's or another tenant's.

// requireJail fails under CI=true where the kernel cannot jail a process,
// and skips elsewhere.
func requireJail(t *testing.T) {
	t.Helper()
	if err := ceiling.JailAvailable(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("these tests need the jail: %v", err)
		}
		t.Skip(err)
	}
}

// probe is a shell command whose output says what a session sees of the
// server: variables of the server's own, the server's command line in
// /proc, how many processes it sees, and its capabilities.
// (The patterns are written so as not to match the probe's own command
// line.)
const probe = `echo "server-vars=$(env | grep -c -e CLAUDE_AGENT_MC[P]_ -e SERVER-SECRE[T])"; ` +
	`echo "server-cmdline=$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' ' ' | grep -c NOTIFY-SECRE[T])"; ` +
	`echo "procs=$(ls /proc | grep -c '^[0-9]')"; ` +
	`grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status | tr '\t\n' '= '`

// TestE2ETenantSees: a session that may run programs (Bash) sees none of
// the server's environment (its token, a secret the operator exported),
// neither the server's command line nor another session's process in
// /proc, and has no capability, though the server runs as root here
// (defects 2, 3 and 7 of issue 43); its own work (a command, a file
// written, a resume after dormancy) goes on as before.
func TestE2ETenantSees(t *testing.T) {
	requireJail(t)
	t.Parallel()
	e := startE2E(t, e2eOptions{
		args: []string{"--notify", "http://127.0.0.1:9/NOTIFY-SECRET", "--warm-spares", "0"},
		env:  map[string]string{"CLAUDE_AGENT_MCP_TOKEN": "SERVER-SECRET-TOKEN", "DATABASE_URL": "postgres://agent:SERVER-SECRET@db/agents"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	other, _ := e.create(t, ctx, nil) // another session's process runs meanwhile
	sid, _ := e.create(t, ctx, map[string]any{"permissionMode": "bypassPermissions"})
	res, out := e.query(t, ctx, sid, "TOOL_BASH["+probe+"]")
	said := fmt.Sprint(out["finalText"])
	if res.IsError || !strings.HasPrefix(said, "Tool said:") {
		t.Fatalf("the probe did not run: %s", text(res))
	}
	t.Logf("the session sees: %s", said)
	for _, want := range []string{"server-vars=0", "server-cmdline=0",
		"CapInh:=0000000000000000", "CapPrm:=0000000000000000", "CapEff:=0000000000000000", "CapBnd:=0000000000000000", "CapAmb:=0000000000000000"} {
		if !strings.Contains(said, want) {
			t.Errorf("the session sees more than its own: %q lacks %s", said, want)
		}
	}
	if m := regexp.MustCompile(`procs=(\d+)`).FindStringSubmatch(said); m == nil || len(m[1]) > 1 {
		t.Errorf("the session sees %v processes in /proc, want its own few", m)
	}
	// Its own work: a file written where it works, a resume after dormancy.
	if res, out := e.query(t, ctx, sid, "TOOL_WRITE[own.txt|mine]"); res.IsError {
		t.Errorf("writing its own file: %s %v", text(res), out)
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "own.txt")); err != nil {
		t.Errorf("its own file: %v", err)
	}
	if res, _ := e.call(t, ctx, "claude_session_close", map[string]any{"sessionId": other}, nil); res.IsError {
		t.Errorf("closing the other session: %s", text(res))
	}
}

// TestE2ELoaderRunsNothing: under "no programs" (--allowed-tools-ceiling
// without Bash), a repository's .mcp.json whose command is the dynamic
// loader with a program, or with a copy of one the session could have
// written, runs neither (defect 4 of issue 43: `ld.so /usr/bin/perl -e …`
// ran, Landlock checking execve and not the loader's mmap), on stdio with
// the project's sources and over --http with --setting-sources
// project,local; the session's own work (Read, Grep) goes on, and the log
// says the server did not start.
func TestE2ELoaderRunsNothing(t *testing.T) {
	requireJail(t)
	requireKernel(t)
	t.Parallel()
	touch, err := exec.LookPath("touch")
	if err != nil {
		t.Fatal(err)
	}
	touch, _ = filepath.EvalSymlinks(touch)
	loaders := ceiling.Interpreters(touch, "")
	if len(loaders) == 0 {
		t.Fatalf("%s is static: no loader to abuse", touch)
	}
	plant := func(t *testing.T, home, cwd string) {
		t.Helper()
		b, err := os.ReadFile(touch)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cwd, "mytouch"), b, 0o755); err != nil {
			t.Fatal(err)
		}
		mcp := fmt.Sprintf(`{"mcpServers":{"ldso":{"command":%q,"args":[%q,%q]},"ldsocopy":{"command":%q,"args":[%q,%q]}}}`,
			loaders[0], touch, marker(home, "loader"), loaders[0], filepath.Join(cwd, "mytouch"), marker(home, "loader-copy"))
		files := map[string]string{
			filepath.Join(cwd, ".mcp.json"):                mcp,
			filepath.Join(cwd, ".claude", "settings.json"): `{"enableAllProjectMcpServers":true}`,
			filepath.Join(cwd, "notes.md"):                 "the word needle is here\n",
		}
		for p, c := range files {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(filepath.Join(home, "markers"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	work := func(t *testing.T, call func(tool string, args map[string]any) (bool, string)) {
		t.Helper()
		if isErr, said := call("claude_direct_query", map[string]any{"prompt": "TOOL_GREP[needle]"}); isErr || !strings.Contains(said, "notes.md") {
			t.Errorf("Grep in the session's own directory: %s", said)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		e := startE2E(t, e2eOptions{args: []string{"--allowed-tools-ceiling", "Read,Grep,Glob", "--warm-spares", "0"}})
		plant(t, e.home, e.cwd)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		work(t, func(tool string, args map[string]any) (bool, string) {
			res, out := e.call(t, ctx, tool, args, nil)
			return res.IsError, fmt.Sprint(out["finalText"], text(res))
		})
		noMarkers(t, e.home)
		log, _ := os.ReadFile(e.logPath)
		if !regexp.MustCompile(`an MCP server of the session did not start.*server=ldso`).Match(log) {
			t.Errorf("the log does not say the loader's server did not start:\n%s", tail(string(log), 3000))
		}
	})
	t.Run("http", func(t *testing.T) {
		var home, cwd string
		e := startHTTPE2E(t, httpE2EOptions{users: []string{"alice"}, setup: func(h, c string) { home, cwd = h, c; plant(t, h, c) },
			args: append([]string{"--setting-sources", "project,local"}, strictFlags...)})
		_ = cwd
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		alice := e.connect(t, "alice", "")
		work(t, func(tool string, args map[string]any) (bool, string) {
			res, out := httpCall(t, ctx, alice, tool, args)
			return res.IsError, fmt.Sprint(out["finalText"], text(res))
		})
		e.waitLog(t, ctx, regexp.MustCompile(`an MCP server of the session did not start.*server=ldso`), 1)
		noMarkers(t, home)
	})
}

// TestE2ETenantTranscripts: over --http each user's sessions have a CLI
// config directory of their own by default, so alice's session cannot
// read bob's transcript (defect 5 of issue 43: every session read and
// could delete every user's transcripts), nor another project's of her
// own in its view; her own history is whole.
func TestE2ETenantTranscripts(t *testing.T) {
	requireJail(t)
	t.Parallel()
	e := startHTTPE2E(t, httpE2EOptions{users: []string{"alice", "bob"}, args: []string{"--warm-spares", "0"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	alice, bob := e.connect(t, "alice", ""), e.connect(t, "bob", "")
	_, bs := httpCall(t, ctx, bob, "claude_session_create", map[string]any{})
	bsid, _ := bs["sessionId"].(string)
	_, bq := httpCall(t, ctx, bob, "claude_chat_query", map[string]any{"sessionId": bsid, "prompt": "BOB-SECRET-PLAN"})
	bconv, _ := bq["claudeSessionId"].(string)
	if bconv == "" {
		t.Fatalf("bob's query: %v", bq)
	}
	// Where bob's transcript lies (2.1.197 writes it a moment after the
	// turn).
	var bobTranscript string
	testkit.Until(t, 30*time.Second, "bob's transcript", func() bool {
		filepath.WalkDir(e.home, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Name() == bconv+".jsonl" {
				bobTranscript = p
			}
			return nil
		})
		return bobTranscript != ""
	})
	if bobTranscript == "" || !strings.Contains(bobTranscript, string(filepath.Separator)+"bob"+string(filepath.Separator)) {
		t.Fatalf("bob's transcript %q is not in a config directory of his own", bobTranscript)
	}
	_, as := httpCall(t, ctx, alice, "claude_session_create", map[string]any{})
	asid, _ := as["sessionId"].(string)
	_, aq := httpCall(t, ctx, alice, "claude_chat_query", map[string]any{"sessionId": asid, "prompt": "TOOL_READ[" + bobTranscript + "]"})
	if said := fmt.Sprint(aq["finalText"]); strings.Contains(said, "BOB-SECRET") || !strings.HasPrefix(said, "Tool error") {
		t.Errorf("alice's session read bob's transcript: %s", said)
	}
	_, h := httpCall(t, ctx, bob, "claude_session_history", map[string]any{"sessionId": bsid})
	if !strings.Contains(fmt.Sprint(h), "BOB-SECRET-PLAN") {
		t.Errorf("bob's history lacks his prompt: %v", h)
	}
}

// TestE2EWorktreeRunsNoHook: worktree "auto" on a repository whose
// post-checkout hook and core.fsmonitor would run a program (defect 13 of
// issue 43: they ran as the server's user, outside every ceiling): the
// worktree is made, and neither runs, under the strict flags.
func TestE2EWorktreeRunsNoHook(t *testing.T) {
	t.Parallel()
	var home string
	e := startHTTPE2E(t, httpE2EOptions{users: []string{"alice"}, args: append([]string{"--http-allow", "reads-files"}, strictFlags...),
		setup: func(h, cwd string) {
			home = h
			run := func(args ...string) {
				if out, err := exec.Command("git", append([]string{"-C", cwd}, args...)...).CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v %s", args, err, out)
				}
			}
			run("init", "-q")
			run("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "one")
			hook := filepath.Join(cwd, ".git", "hooks", "post-checkout")
			if err := os.WriteFile(hook, []byte("#!/bin/sh\n"+sh(h, "post-checkout", "")+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			run("config", "core.fsmonitor", sh(h, "fsmonitor", ""))
			if err := os.MkdirAll(filepath.Join(h, "markers"), 0o755); err != nil {
				t.Fatal(err)
			}
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	alice := e.connect(t, "alice", "")
	res, out := httpCall(t, ctx, alice, "claude_session_create", map[string]any{"cwd": e.cwd, "worktree": "auto"})
	if res.IsError {
		t.Fatalf("create with a worktree: %s", text(res))
	}
	if w, _ := out["worktree"].(map[string]any); w == nil || !strings.Contains(fmt.Sprint(w["path"]), ".claude/worktrees/") {
		t.Errorf("the worktree: %v", out["worktree"])
	}
	httpCall(t, ctx, alice, "claude_session_close", map[string]any{"sessionId": out["sessionId"]})
	noMarkers(t, home)
}
