package resources

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
)

// A session's worktree as a diff: a summary of the files changed first,
// then each file's patch, in pages like the transcript's, oldest (the
// summary) first.

func diffPageURI(id string, page int) string { return diffURI(id) + "?page=" + strconv.Itoa(page) }

// maxSummaryFiles bounds the files the summary lists.
const maxSummaryFiles = 500

// diffPage renders page (1 the first, also for 0) of a session's diff.
func diffPage(ctx context.Context, s *sessions.Session, page, pageBytes int) (string, error) {
	d, err := s.Diff(ctx)
	if errors.Is(err, sessions.ErrNoWorktree) {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("session %s has no worktree, so no diff: only a session created with worktree has one; read %s instead", s.ID, transcriptURI(s.ID))}
	}
	if err != nil {
		return "", fmt.Errorf("reading the diff of session %s: %w", s.ID, err)
	}
	pages := pack(append([]string{summary(d)}, fileBlocks(d, pageBytes)...), pageBytes)
	if page == 0 {
		page = 1
	}
	if page > len(pages) {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("page %d of session %s's diff does not exist: it has %d page(s); read %s for the first",
			page, s.ID, len(pages), diffURI(s.ID))}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Diff of session %s, page %d of %d\n\n", label(s), page, len(pages))
	for _, block := range pages[page-1] {
		b.WriteString(block)
	}
	if page > 1 {
		fmt.Fprintf(&b, "\nEarlier: %s\n", diffPageURI(s.ID, page-1))
	}
	if page < len(pages) {
		fmt.Fprintf(&b, "\nLater: %s\n", diffPageURI(s.ID, page+1))
	}
	return b.String(), nil
}

// summary is the diff's first block: the files changed, with their lines.
func summary(d *worktree.Diff) string {
	var b strings.Builder
	added, removed := 0, 0
	for _, f := range d.Files {
		added, removed = added+f.Added, removed+f.Removed
	}
	fmt.Fprintf(&b, "Branch %s against %s, the commit it branched from (uncommitted and untracked files included): %d file(s) changed, +%d −%d.\n\n",
		d.Branch, d.Base[:min(len(d.Base), 12)], len(d.Files), added, removed)
	if len(d.Files) == 0 {
		b.WriteString("(Nothing changed.)\n\n")
		return b.String()
	}
	b.WriteString("| File | Added | Removed |\n|---|---:|---:|\n")
	for i, f := range d.Files {
		if i == maxSummaryFiles {
			fmt.Fprintf(&b, "| … %d more | | |\n", len(d.Files)-i)
			break
		}
		if f.Binary {
			fmt.Fprintf(&b, "| `%s` | binary | |\n", f.Path)
			continue
		}
		fmt.Fprintf(&b, "| `%s` | %d | %d |\n", f.Path, f.Added, f.Removed)
	}
	b.WriteString("\n")
	if d.Cut {
		b.WriteString("(The patch is longer than the server reads: its end is cut.)\n\n")
	}
	return b.String()
}

// fileBlocks are the patch's files, each in a diff code block, a file
// longer than a page split at lines.
func fileBlocks(d *worktree.Diff, pageBytes int) []string {
	if d.Patch == "" {
		return nil
	}
	var out []string
	files := strings.Split("\n"+d.Patch, "\ndiff --git ")[1:]
	for _, f := range files {
		body := "diff --git " + strings.TrimSuffix(f, "\n") + "\n"
		for len(body) > 0 {
			n := min(len(body), pageBytes-100)
			if n < len(body) {
				if i := strings.LastIndexByte(body[:n], '\n'); i > 0 {
					n = i + 1
				}
			}
			out = append(out, "```diff\n"+strings.ReplaceAll(body[:n], "```", "` ``")+"```\n\n")
			body = body[n:]
		}
	}
	return out
}

// pack packs blocks into pages of at most pageBytes, in order: a page ends
// before the block that would overflow it.
func pack(blocks []string, pageBytes int) [][]string {
	pages := [][]string{{}}
	size := 0
	for _, block := range blocks {
		cur := len(pages) - 1
		if len(pages[cur]) > 0 && size+len(block) > pageBytes {
			pages, size = append(pages, nil), 0
			cur++
		}
		pages[cur] = append(pages[cur], block)
		size += len(block)
	}
	return pages
}
