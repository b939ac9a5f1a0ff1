package worktree

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/ceiling"
)

// The server runs git on a repository a session may write: its
// configuration, hooks and attributes are the session's to plant. So git
// runs none of the repository's programs: hooks are off (core.hooksPath),
// so are core.fsmonitor, signing, and every filter, diff and merge driver
// its configuration names (their commands emptied on the command line,
// which wins over every configuration file and include); and where the
// kernel can, git runs in a jail (package ceiling) where it may execute
// nothing but git's own binaries and write nothing but the repository
// (a link planted on the way, say to .claude/worktrees, leads nowhere
// else).

// safeConfig are the settings every git the server runs gets.
var safeConfig = []string{
	"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
	"-c", "commit.gpgSign=false", "-c", "tag.gpgSign=false", "-c", "core.sshCommand=false",
	"-c", "diff.external=", "-c", "core.pager=cat", "-c", "credential.helper=", "-c", "protocol.allow=never",
}

// driverKeys are the configuration keys that name a program: a filter's,
// a diff driver's, a merge driver's.
const driverKeys = `^(filter|diff|merge)\..*\.(clean|smudge|process|command|textconv|driver)$`

// plumbing are the git commands that read or write objects and refs
// alone, never a file of a working tree: no filter or driver can run, so
// the lookup of their keys is spared (half the gits of a land).
var plumbing = map[string]bool{"rev-parse": true, "merge-base": true, "rev-list": true, "update-ref": true,
	"symbolic-ref": true, "commit-tree": true, "write-tree": true}

// gitTimeout bounds every git the server runs.
const gitTimeout = 30 * time.Second

// git runs git in dir (a repository's directory, or one of its worktrees)
// with args, as the package comment says, and returns its output. write
// are the directories git may write (none: it only reads; optional locks
// are off).
func git(ctx context.Context, dir string, write []string, args ...string) (string, error) {
	return gitWith(ctx, dir, gitOpts{write: write}, args...)
}

// gitOpts are what some gits need beyond git's: directories to write,
// variables (a temporary index), settings (an identity, a protocol).
type gitOpts struct {
	write, env, config []string
	// shell lets git run /bin/sh too: git starts a local push's
	// git-receive-pack through it, with a command the caller pinned on the
	// command line (no configuration of the repository's).
	shell bool
}

// gitWith is git with opts. Its output is returned with an error too (git
// merge-tree reports conflicts with exit status 1).
func gitWith(ctx context.Context, dir string, opts gitOpts, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	if len(args) > 0 && plumbing[args[0]] {
		return run(ctx, dir, opts, opts.config, args...)
	}
	drivers, err := run(ctx, dir, gitOpts{}, nil, "config", "-z", "--get-regexp", driverKeys)
	if err != nil && !strings.Contains(err.Error(), "exit status 1") { // 1: none
		return "", err
	}
	var off []string
	for _, entry := range strings.Split(drivers, "\x00") {
		if key, _, _ := strings.Cut(entry, "\n"); key != "" {
			off = append(off, "-c", key+"=")
		}
	}
	return run(ctx, dir, opts, append(off, opts.config...), args...)
}

// run runs one git with safeConfig and extra settings and variables,
// writing write.
func run(ctx context.Context, dir string, opts gitOpts, extra []string, args ...string) (string, error) {
	full := append(append(append([]string{"--no-pager", "-C", dir}, safeConfig...), extra...), args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = append(gitEnv(), opts.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := startJailed(cmd, opts.write, opts.shell)
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		return strings.TrimRight(out.String(), "\n"), fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimRight(out.String(), "\n"), nil
}

// gitEnv is git's environment: the server's paths, home and locale, none
// of its secrets, no GIT_* of its own that would point git elsewhere.
func gitEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TZ", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
}

// startJailed starts cmd in a jail of its own where the kernel can: git's
// own binaries alone executable, write alone writable.
func startJailed(cmd *exec.Cmd, write []string, shell bool) error {
	bin, err := exec.LookPath("git")
	if err != nil {
		return fmt.Errorf("git is not on the server's PATH: %w", err)
	}
	cmd.Path = bin
	if ceiling.JailAvailable() != nil {
		return cmd.Start() // the configuration above alone keeps the repository's programs off
	}
	c := *gitCeiling(bin)
	c.Files, c.Read = true, []string{"/"}
	c.Write = append(slices.Clip(write), "/dev/null")
	if shell {
		c.Exec = append(slices.Clip(c.Exec), "/bin/sh")
		c.Exec = append(c.Exec, ceiling.Interpreters("/bin/sh", "")...)
		c.Map = append(slices.Clip(c.Map), ceiling.Libraries("/bin/sh")...)
	}
	return c.Start(cmd)
}

// gitCeiling is what git may execute: itself, its exec-path (git-core)
// and its loader, with its libraries; found once.
var gitCeiling = func() func(string) *ceiling.Ceiling {
	var once sync.Once
	var c *ceiling.Ceiling
	return func(bin string) *ceiling.Ceiling {
		once.Do(func() {
			c = &ceiling.Ceiling{Jail: true, NoPrograms: true, Exec: append([]string{bin}, ceiling.Interpreters(bin, "")...), Map: ceiling.Libraries(bin)}
			if out, err := exec.Command(bin, "--exec-path").Output(); err == nil {
				c.Exec = append(c.Exec, strings.TrimSpace(string(out)))
			}
		})
		return c
	}
}()

// commonDir is the git directory shared by the worktrees of the
// repository at root (its .git, or where a .git file points).
func commonDir(ctx context.Context, root string) (string, error) {
	common, err := git(ctx, root, nil, "rev-parse", "--git-common-dir")
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(root, common)
	}
	if real, err := filepath.EvalSymlinks(common); err == nil {
		common = real
	}
	return common, nil
}
