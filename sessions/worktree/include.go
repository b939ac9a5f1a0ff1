package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/beneath"
)

// A new worktree has the repository's tracked files only: git copies no
// ignored file (.env, local configuration, installed dependencies), so a
// fresh worktree often cannot build. Claude Code's convention fills the
// gap: .worktreeinclude, at the repository's root, names in .gitignore's
// syntax the ignored files a new worktree gets a copy of. Make copies them
// as the server does everything in a repository a session may write: git
// decides what matches and what is ignored (the hardened runner), every
// file is read beneath the repository and written beneath the worktree
// without following a link (package beneath), and the copy is bounded.

// includeFile is the file, at a repository's root, that names them.
const includeFile = ".worktreeinclude"

// maxIncludeBytes and maxIncludeFiles bound what one worktree gets
// (variables: a test lowers them).
var (
	maxIncludeBytes int64 = 100 << 20
	maxIncludeFiles       = 10_000
)

const (
	// maxIncludeList bounds includeFile itself (its patterns go on git's
	// command line).
	maxIncludeList = 16 << 10
	// maxReported bounds the paths a report lists, copied and skipped.
	maxReported = 20
)

// Copied is what a new worktree got of the files .worktreeinclude names.
type Copied struct {
	Count   int      `json:"count"`
	Files   []string `json:"files" jsonschema:"The first 20 files copied."`
	Skipped []string `json:"skipped,omitempty" jsonschema:"What was not copied, and why (at most 20, then how many more)."`

	unreported int // skipped beyond maxReported
}

// skip records what was not copied and why.
func (c *Copied) skip(what, why string) {
	if len(c.Skipped) < maxReported {
		c.Skipped = append(c.Skipped, what+": "+why)
	} else {
		c.unreported++
	}
}

// include copies into the new worktree at dst the files of the repository
// at root that its .worktreeinclude names and git ignores; nil when there
// is no .worktreeinclude. Nothing it meets fails the worktree: what it
// could not copy is reported.
func include(ctx context.Context, root, dst string) *Copied {
	c := localSettings(root, dst)
	list, err := beneath.ReadFile(beneath.Path{Dir: root, Rel: includeFile}, maxIncludeList)
	if errors.Is(err, fs.ErrNotExist) {
		return c
	}
	if c == nil {
		c = &Copied{Files: []string{}}
	}
	if err != nil {
		c.skip(includeFile, "not read: "+reason(err))
		return c
	}
	if patterns := c.patterns(root, string(list)); len(patterns) > 0 {
		paths, err := ignoredMatches(ctx, root, patterns)
		if err != nil {
			c.skip(includeFile, "listing the files it names: "+err.Error())
		}
		if slices.Contains(c.Files, localFile) { // copied already
			paths = slices.DeleteFunc(paths, func(p string) bool { return p == localFile })
		}
		c.copyAll(ctx, root, dst, paths)
	}
	if c.unreported > 0 {
		c.Skipped = append(c.Skipped, fmt.Sprintf("and %d more skipped", c.unreported))
	}
	return c
}

// localFile is the repository's local settings (its permissions, its
// hooks), which git ignores: Claude Code copies it into a new worktree
// (unless it is a link) so that a session there runs as it would in the
// repository; so does Make.
const localFile = ".claude/settings.local.json"

// localSettings copies the repository's local settings into the worktree
// at dst, where it has none; nil when there is nothing to copy.
func localSettings(root, dst string) *Copied {
	src := beneath.Path{Dir: root, Rel: localFile}
	if there, err := beneath.Exists(src); err != nil || !there {
		return nil
	}
	c := &Copied{Files: []string{}}
	switch _, err := copyFile(src, beneath.Path{Dir: dst, Rel: localFile}, maxSettingsBytes); {
	case errors.Is(err, fs.ErrExist): // tracked: the worktree has it
		return nil
	case err != nil:
		c.skip(localFile, reason(err))
	default:
		c.Count, c.Files = 1, []string{localFile}
	}
	return c
}

// patterns are the patterns of list, as git reads a .gitignore (blank
// lines and comments left out, trailing spaces trimmed unless escaped),
// less those that name a place outside the repository, which are refused.
func (c *Copied) patterns(root, list string) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimPrefix(list, "\ufeff"), "\n") {
		line = trimSpaces(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == '#' {
			continue
		}
		if why := outside(root, line); why != "" {
			c.skip(includeFile, fmt.Sprintf("the pattern %q %s: refused", line, why))
			continue
		}
		out = append(out, line)
	}
	return out
}

// trimSpaces trims line's trailing spaces, but for one escaped with a
// backslash (.gitignore's rule).
func trimSpaces(line string) string {
	end := len(line)
	for end > 0 && line[end-1] == ' ' && (end < 2 || line[end-2] != '\\') {
		end--
	}
	return line[:end]
}

// absoluteRE is a path absolute on Windows, or a network path.
var absoluteRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z]:|//|\\\\)`) })

// outside says why pattern names a place outside the repository at root
// ("" when it does not). A leading slash anchors a pattern at the root, as
// in a .gitignore; a pattern that starts with the root's own absolute path
// is taken for the absolute path it looks like.
func outside(root, pattern string) string {
	p := strings.TrimPrefix(pattern, "!")
	switch {
	case absoluteRE().MatchString(p), strings.HasPrefix(p, filepath.ToSlash(root)+"/"):
		return "is an absolute path (a pattern is relative to the repository's root)"
	case strings.HasPrefix(p, "~"):
		return "names a home directory, outside the repository"
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "leaves the repository"
		}
	}
	return ""
}

// ignoredMatches lists the files under root that patterns match, are not
// tracked, and git ignores, and none of the server's worktrees. git
// matches (patterns given to ls-files as exclude patterns, their order
// and negations kept, anchored at the root as a .gitignore there is);
// it lists no tracked file, none through a link, none of a nested
// repository. Ignored is what git does not list as untracked: that list
// is short (git stops at an ignored directory), and taken second, so a
// file made meanwhile is not taken for ignored.
func ignoredMatches(ctx context.Context, root string, patterns []string) ([]string, error) {
	args := []string{"ls-files", "-z", "--others", "--ignored"}
	for _, p := range patterns {
		args = append(args, "--exclude="+p)
	}
	matched, err := git(ctx, root, nil, args...)
	if err != nil {
		return nil, err
	}
	plain, err := git(ctx, root, nil, "ls-files", "-z", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	untracked := map[string]bool{}
	for _, f := range strings.Split(plain, "\x00") {
		untracked[f] = true
	}
	var out []string
	for _, f := range strings.Split(matched, "\x00") {
		if f == "" || untracked[f] || f == worktreesDir+"/" || strings.HasPrefix(f, worktreesDir+"/") {
			continue
		}
		out = append(out, f)
	}
	return out, nil
}

// errOverCap is a file that would take the copy past its bounds.
var errOverCap = errors.New("over the cap")

// copyAll copies paths from root to dst, within the bounds, until ctx
// ends.
func (c *Copied) copyAll(ctx context.Context, root, dst string, paths []string) {
	var total int64
	over := 0
	for i, rel := range paths {
		if err := ctx.Err(); err != nil {
			c.Skipped = append(c.Skipped, fmt.Sprintf("%d file(s) not copied: %v", len(paths)-i, err))
			break
		}
		if strings.HasSuffix(rel, "/") {
			c.skip(rel, "a repository of its own, not copied")
			continue
		}
		var n int64
		err := errOverCap
		if c.Count < maxIncludeFiles {
			n, err = copyFile(beneath.Path{Dir: root, Rel: rel}, beneath.Path{Dir: dst, Rel: rel}, maxIncludeBytes-total)
		}
		switch {
		case errors.Is(err, errOverCap):
			over++
		case err != nil:
			c.skip(rel, reason(err))
		default:
			total += n
			c.Count++
			if len(c.Files) < maxReported {
				c.Files = append(c.Files, rel)
			}
		}
	}
	if over > 0 {
		c.Skipped = append(c.Skipped, fmt.Sprintf("%d more file(s) not copied: a worktree gets at most %d files and %d MiB", over, maxIncludeFiles, maxIncludeBytes>>20))
	}
}

// copyFile copies the regular file src to dst, where nothing is, with its
// mode, at most max bytes (errOverCap beyond), neither reached through a
// link; it returns the bytes copied.
func copyFile(src, dst beneath.Path, max int64) (int64, error) {
	f, err := beneath.Open(src)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if fi.Size() > max {
		return 0, errOverCap
	}
	r := &bounded{r: f, left: max}
	if err := beneath.WriteNewFrom(dst, r, fi.Mode().Perm()); err != nil {
		return 0, err
	}
	return max - r.left, nil
}

// bounded reads r, failing with errOverCap past left bytes (a file may
// grow as it is copied).
type bounded struct {
	r    io.Reader
	left int64
}

func (b *bounded) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if b.left -= int64(n); b.left < 0 {
		return n, errOverCap
	}
	return n, err
}

// reason says in words why a file was not copied.
func reason(err error) string {
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrExist):
		return "the worktree has a file there already (from its branch), kept"
	case errors.Is(err, fs.ErrNotExist):
		return "gone before it was copied"
	case errors.Is(err, beneath.ErrLink):
		return "a symbolic link, or reached through one: not followed"
	case errors.As(err, &pe):
		return pe.Err.Error()
	}
	return err.Error()
}
