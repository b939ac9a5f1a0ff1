//go:build linux

package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
)

// The headline of delegated work coming back usable (issue 46), with the
// real interactive Claude Code as the host: it fans out four sub-agents
// into worktrees of a repository whose check needs an ignored .env (which
// .worktreeinclude names); one sub-agent asks a clarifying question with
// three choices, answered through elicitation (the host's Elicitation
// hook, a person's stand-in, picks one); each answers with its structured
// result; the host reads two diffs, lands one, discards one, rewinds one
// and lands it, and lands the last; the repository's branch ends with
// exactly the landed commits, and no worktree, branch or process is left.

const (
	// delegationToken is what the repository's check needs from .env.
	delegationToken = "E2E_TOKEN=delegated"
	// delegationAnswer is the choice the host's Elicitation hook picks.
	delegationAnswer = "SQLite"
)

// delegationRepo makes dir a repository on main whose check.sh passes only
// with the git-ignored .env that .worktreeinclude names.
func delegationRepo(t *testing.T, dir string) {
	t.Helper()
	files := map[string]string{
		".gitignore":       ".env\n",
		".worktreeinclude": ".env\n",
		".env":             delegationToken + "\n",
		"check.sh":         ". ./.env\nif [ \"$E2E_TOKEN\" = delegated ]; then echo CHECK-OK; else echo 'CHECK-FAILED: no .env' >&2; exit 1; fi\n",
		"README":           "base\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitRun(t, dir, "init", "--quiet", "-b", "main")
	gitRun(t, dir, "add", ".gitignore", ".worktreeinclude", "check.sh", "README")
	gitRun(t, dir, "commit", "--quiet", "-m", "base")
}

// elicitationHook is the host's settings with an Elicitation hook that
// answers our server's forms as a person would: a permission question
// with "allow once", a sub-agent's questions with delegationAnswer (and
// "Auth" where several may be picked). Each form it saw is appended to
// seen.
func elicitationHook(seen string) map[string]any {
	answer := func(content map[string]any) string {
		b, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "Elicitation", "action": "accept", "content": content}})
		return shellQuote(string(b))
	}
	script := `in=$(cat); printf '%s\n' "$in" >> ` + shellQuote(seen) + `; case "$in" in *'"decision"'*) echo ` +
		answer(map[string]any{"decision": "allow_once"}) + `;; *) echo ` + answer(map[string]any{"q1": delegationAnswer, "q2": []string{"Auth"}}) + `;; esac`
	return map[string]any{"hooks": map[string]any{"Elicitation": []any{map[string]any{"hooks": []any{
		map[string]any{"type": "command", "command": "/bin/sh -c " + shellQuote(script)},
	}}}}}
}

// createdSession reads the session id of the create call id from r.
func createdSession(r *fakeapi.Request, id string) (string, error) {
	out, err := resultJSON(r, id)
	if err != nil {
		return "", err
	}
	sid, _ := out["sessionId"].(string)
	if sid == "" {
		return "", fmt.Errorf("%s gave no sessionId: %v", id, out)
	}
	return sid, nil
}

// onSession is a call of tool on the session the create call create made,
// with args beside its sessionId.
func onSession(id, tool, create string, args map[string]any) hostCall {
	return hostCall{id: id, tool: tool, input: func(r *fakeapi.Request) (any, error) {
		sid, err := createdSession(r, create)
		if err != nil {
			return nil, err
		}
		in := map[string]any{"sessionId": sid}
		for k, v := range args {
			in[k] = v
		}
		return in, nil
	}}
}

// readDiff is the host's ReadMcpResourceTool call for the diff of the
// session create made.
func readDiff(id, create string) hostCall {
	return hostCall{id: id, tool: "ReadMcpResourceTool", builtin: true, input: func(r *fakeapi.Request) (any, error) {
		sid, err := createdSession(r, create)
		if err != nil {
			return nil, err
		}
		return map[string]any{"server": hostServerName, "uri": "claude-agent-mcp://sessions/" + sid + "/diff"}, nil
	}}
}

// delegationPlan scripts the host model: four creates, then their turns
// (a check, a question, a file each, a second file for c), two diffs read,
// a landed and b discarded, c rewound to before its third prompt and
// landed, d landed.
func delegationPlan(repo string) hostPlan {
	names := []string{"a", "b", "c", "d"}
	var creates, checks, writes []hostCall
	for _, n := range names {
		creates = append(creates, hostCall{id: "toolu_create_" + n, tool: "claude_session_create",
			input: staticInput(map[string]any{"cwd": repo, "worktree": "sub-" + n, "permissionMode": "acceptEdits", "name": "sub-" + n})})
		prompt := "TOOL_BASH[sh check.sh]"
		if n == "d" {
			prompt = "TOOL_ASK"
		}
		checks = append(checks, onSession("toolu_check_"+n, "claude_chat_query", "toolu_create_"+n, map[string]any{"prompt": prompt}))
		file := n + ".txt"
		if n == "c" {
			file = "c1.txt"
		}
		writes = append(writes, onSession("toolu_write_"+n, "claude_chat_query", "toolu_create_"+n,
			map[string]any{"prompt": "TOOL_WRITE[" + file + "|written by " + n + "]"}))
	}
	return hostPlan{final: "HOST DONE", steps: [][]hostCall{
		creates,
		checks,
		writes,
		{onSession("toolu_write_c2", "claude_chat_query", "toolu_create_c", map[string]any{"prompt": "TOOL_WRITE[c2.txt|a second thought]"})},
		{readDiff("toolu_diff_a", "toolu_create_a"), readDiff("toolu_diff_b", "toolu_create_b")},
		{onSession("toolu_land_a", "claude_session_land", "toolu_create_a", map[string]any{"how": "fast-forward", "message": "a: add a.txt"}),
			onSession("toolu_land_b", "claude_session_land", "toolu_create_b", map[string]any{"how": "discard"})},
		{onSession("toolu_rewind_c_dry", "claude_session_rewind", "toolu_create_c", map[string]any{"prompt": 3, "dryRun": true})},
		{onSession("toolu_rewind_c", "claude_session_rewind", "toolu_create_c", map[string]any{"prompt": 3})},
		{onSession("toolu_land_c", "claude_session_land", "toolu_create_c", map[string]any{"how": "squash", "message": "c: add c1.txt"})},
		{onSession("toolu_land_d", "claude_session_land", "toolu_create_d", map[string]any{"how": "merge", "message": "d: add d.txt"})},
	}}
}

// TestE2EDelegationHost runs the headline (see the top of this file)
// with the sub-agents on the CLI of CLAUDE_BIN, the host's, and on the
// oldest supported CLI (CLAUDE_OLDEST_BIN; scripts/test sets it), under
// the host 2.1.330 (the oldest that can be driven as the host).
func TestE2EDelegationHost(t *testing.T) {
	requireGit(t)
	t.Run("children_host_cli", func(t *testing.T) { delegation(t, "") })
	t.Run("children_oldest_cli", func(t *testing.T) {
		oldest := os.Getenv("CLAUDE_OLDEST_BIN")
		if oldest == "" {
			if os.Getenv("CI") == "true" {
				t.Fatal("CLAUDE_OLDEST_BIN names no CLI and CI=true (scripts/test sets it)")
			}
			t.Skip("CLAUDE_OLDEST_BIN names no CLI: the sub-agents on the oldest CLI are not tried")
		}
		delegation(t, oldest)
	})
}

// delegation runs the headline with the sub-agents on childCLI ("": the
// host's CLI).
func delegation(t *testing.T, childCLI string) {
	start := time.Now()
	var repo, seen string
	h := startHost(t, hostOptions{
		prompt:   "Split the work among four sub-agents in worktrees, then review and land it.",
		env:      map[string]string{"CLAUDE_CODE_DISABLE_MCP_TASKS": "1"},
		childCLI: childCLI,
		settings: func() map[string]any {
			seen = filepath.Join(t.TempDir(), "forms.jsonl")
			return elicitationHook(seen)
		}(),
		plan: func(h *host) hostPlan {
			repo = filepath.Join(h.home, "repo")
			if err := os.MkdirAll(repo, 0o755); err != nil {
				t.Fatal(err)
			}
			delegationRepo(t, repo)
			return delegationPlan(repo)
		},
	})
	r := h.waitToolResult(8*time.Minute, "toolu_land_d")
	defer h.report(start)
	result := func(id string) map[string]any {
		t.Helper()
		out, err := resultJSON(r, id)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	for _, n := range []string{"a", "b", "c", "d"} {
		w, _ := result("toolu_create_" + n)["worktree"].(map[string]any)
		copied, _ := w["copied"].(map[string]any)
		if !slices.Contains(toStrings(copied["files"]), ".env") {
			t.Errorf("sub-agent %s's worktree got no .env: %v", n, w)
		}
	}
	for _, n := range []string{"a", "b", "c"} {
		if out := result("toolu_check_" + n); !strings.Contains(fmt.Sprint(out["finalText"]), "CHECK-OK") {
			t.Errorf("the check in sub-agent %s's worktree: %v", n, out)
		}
	}
	asked := result("toolu_check_d")
	if q := fmt.Sprint(asked["questions"]); !strings.Contains(q, "Which database should the service use?") || !strings.Contains(q, delegationAnswer) {
		t.Errorf("the question's result does not list the question and its answer: %v", asked)
	}
	if forms, _ := os.ReadFile(seen); !strings.Contains(string(forms), "Which database should the service use?") {
		t.Errorf("the host's Elicitation hook saw no question form: %s", forms)
	}
	told := false
	for _, cr := range h.api.Filter(fakeapi.From(claudeagent.Entrypoint)) {
		for _, tr := range cr.LastToolResults() {
			told = told || strings.Contains(tr.Content, `"Which database should the service use?"="`+delegationAnswer+`"`)
		}
	}
	if !told {
		t.Errorf("the sub-agent's model was not told the answer %q", delegationAnswer)
	}
	for id, file := range map[string]string{"toolu_diff_a": "a.txt", "toolu_diff_b": "b.txt"} {
		if tr, ok := r.ToolResult(id); !ok || !strings.Contains(tr.Content, file) {
			t.Errorf("the diff the host read (%s) does not name %s: %q", id, file, tr.Content)
		}
	}
	if dry := result("toolu_rewind_c_dry"); !slices.Contains(toStrings(dry["files"]), "c2.txt") && !strings.Contains(fmt.Sprint(dry["files"]), "c2.txt") {
		t.Errorf("the rewind's dry run does not list c2.txt: %v", dry)
	}
	for _, id := range []string{"toolu_land_a", "toolu_land_b", "toolu_land_c", "toolu_land_d"} {
		if out := result(id); out["sessionClosed"] != true {
			t.Errorf("%s: %v", id, out)
		}
	}
	if childCLI != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		want, err := claudeagent.CLIVersion(ctx, childCLI)
		if err != nil {
			t.Fatal(err)
		}
		for _, cr := range h.api.Filter(fakeapi.From(claudeagent.Entrypoint)) {
			if v := cr.CLIVersion(); v != want {
				t.Errorf("a sub-agent's request came from CLI %q, want %s (%s)", v, want, childCLI)
				break
			}
		}
	}
	checkLanded(t, repo)
}

// checkLanded checks the repository after the landings: main has exactly
// the base and the landed commits (a, c squashed, d merged), the landed
// files and neither the discarded nor the rewound one, and no worktree or
// branch is left.
func checkLanded(t *testing.T, repo string) {
	t.Helper()
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	subjects := strings.Split(git("log", "--format=%s", "main"), "\n")
	for _, want := range []string{"a: add a.txt", "c: add c1.txt", "d: add d.txt", "base"} {
		if !slices.Contains(subjects, want) {
			t.Errorf("main lacks the commit %q: %q", want, subjects)
		}
	}
	if n := git("rev-list", "--count", "--no-merges", "main"); n != "4" {
		t.Errorf("main has %s commits besides merges, want the base and the three landed: %q", n, subjects)
	}
	files := strings.Split(git("ls-tree", "--name-only", "main"), "\n")
	for _, f := range []string{"a.txt", "c1.txt", "d.txt"} {
		if !slices.Contains(files, f) {
			t.Errorf("main lacks %s: %v", f, files)
		}
	}
	for _, f := range []string{"b.txt", "c2.txt"} {
		if slices.Contains(files, f) {
			t.Errorf("main has %s (discarded or rewound): %v", f, files)
		}
	}
	if wts := strings.Count(git("worktree", "list", "--porcelain"), "worktree "); wts != 1 {
		t.Errorf("%d worktrees left, want the repository's own:\n%s", wts, git("worktree", "list"))
	}
	if branches := git("branch", "--format=%(refname:short)"); branches != "main" {
		t.Errorf("branches left: %q", branches)
	}
	if status := git("status", "--porcelain"); status != "" {
		t.Errorf("the repository's working tree is not clean after the landings:\n%s", status)
	}
}
