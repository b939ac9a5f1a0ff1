package worktree

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// A pull request instead of a local land: the worktree's branch, what is
// uncommitted committed first, is pushed to the repository's remote by the
// server's hardened git (so a remote that needs a credential helper or ssh
// of the repository's configuration is refused: push it by hand then), and
// gh opens the pull request against the branch the worktree came from.

// ghTimeout bounds gh pr create.
const ghTimeout = 2 * time.Minute

// pullRequest pushes the worktree's work and opens a pull request.
func (w *Worktree) pullRequest(ctx context.Context, o LandOptions, common string) (*Landed, error) {
	gh, err := exec.LookPath("gh")
	if err != nil {
		return nil, errNoGH
	}
	remote, url, err := w.remote(ctx)
	if err != nil {
		return nil, err
	}
	write := []string{common}
	if local := localRemote(w.Repo, url); local != "" {
		if o.Check != nil {
			if err := o.Check("the remote "+remote, local); err != nil {
				return nil, err
			}
		}
		write = append(write, local)
	}
	target, err := w.target(ctx)
	if err != nil {
		return nil, err
	}
	s, err := w.snap(ctx)
	if err != nil {
		return nil, err
	}
	msg, by := w.message(ctx, o, true)
	if by == BySession {
		if s, err = w.snap(ctx); err != nil {
			return nil, err
		}
	}
	tip := s.head
	if s.dirty {
		if tip, err = commitTree(ctx, w.Path, common, s.tree, msg, s.head); err != nil {
			return nil, err
		}
	}
	files, err := changes(ctx, w.Repo, w.Base, tip)
	if err != nil {
		return nil, err
	}
	// The programs a push starts are pinned here, over the repository's
	// configuration: git's own receive-pack, no ssh (core.sshCommand).
	push := gitOpts{write: write, shell: true, config: []string{"-c", "protocol.file.allow=always", "-c", "protocol.https.allow=always",
		"-c", "remote." + remote + ".receivepack=git-receive-pack", "-c", "remote." + remote + ".uploadpack=git-upload-pack"}}
	if _, err := gitWith(ctx, w.Repo, push, "push", "--quiet", remote, tip+":refs/heads/"+w.Branch); err != nil {
		return nil, fmt.Errorf("pushing %s to %s: %w; nothing else was done: push it yourself (git push %s %s) and open the pull request, or land locally", w.Branch, remote, err, remote, w.Branch)
	}
	pr, err := openPR(ctx, gh, w.Repo, w.Branch, target, msg)
	if err != nil {
		return nil, fmt.Errorf("pushed %s to %s, but gh pr create failed: %w; the worktree is kept: open the pull request yourself, then discard", w.Branch, remote, err)
	}
	out := &Landed{How: PullRequest, Target: target, Commits: []string{tip}, Files: files, Message: msg, MessageBy: by, PR: pr}
	if err := w.remove(ctx, common); err != nil {
		return out, fmt.Errorf("opened %s, but removing the worktree: %w", pr, err)
	}
	out.Removed = true
	return out, nil
}

// remote is the repository's remote to push to: origin, else the first.
func (w *Worktree) remote(ctx context.Context) (name, url string, err error) {
	out, _ := git(ctx, w.Repo, nil, "remote")
	names := strings.Fields(out)
	if len(names) == 0 {
		return "", "", fmt.Errorf("how pull-request needs a remote, and %s has none: add one (git remote add origin URL), or land with fast-forward, merge or squash", w.Repo)
	}
	name = names[0]
	if slices.Contains(names, "origin") {
		name = "origin"
	}
	url, err = git(ctx, w.Repo, nil, "remote", "get-url", "--push", name)
	return name, url, err
}

// localRemote is the directory a remote's URL names on this machine ("" for
// a remote elsewhere): the push writes it.
func localRemote(repo, url string) string {
	switch {
	case strings.HasPrefix(url, "file://"):
		return strings.TrimPrefix(url, "file://")
	case strings.Contains(url, "://"), strings.Contains(url, ":") && !strings.HasPrefix(url, "/") && !strings.HasPrefix(url, "."):
		return "" // a URL, or scp-like host:path
	}
	return abs(repo, url)
}

// openPR runs gh pr create in repo and returns what it printed (the pull
// request's URL). The git gh runs gets hooks and fsmonitor off.
func openPR(ctx context.Context, gh, repo, branch, target, msg string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ghTimeout)
	defer cancel()
	title, body, _ := strings.Cut(msg, "\n")
	if strings.TrimSpace(body) == "" {
		body = "Landed from the worktree branch " + branch + " by claude-agent-mcp."
	}
	cmd := exec.CommandContext(ctx, gh, "pr", "create", "--head", branch, "--base", target, "--title", title, "--body", body)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GH_PROMPT_DISABLED=1", "GIT_CONFIG_COUNT=2",
		"GIT_CONFIG_KEY_0=core.hooksPath", "GIT_CONFIG_VALUE_0=/dev/null", "GIT_CONFIG_KEY_1=core.fsmonitor", "GIT_CONFIG_VALUE_1=false")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%v: %s", err, strings.TrimSpace(errb.String()))
	}
	lines := strings.Fields(out.String())
	if len(lines) == 0 {
		return "", nil
	}
	return lines[len(lines)-1], nil
}
