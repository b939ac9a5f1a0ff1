package resources

import (
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
)

// TestDiffPages: the summary comes first, each file's patch is a block of
// its own, a file longer than a page is split at lines over pages, and
// nothing of the patch is lost or repeated.
func TestDiffPages(t *testing.T) {
	big := "diff --git a/big b/big\n" + strings.Repeat("+a line of the big file\n", 400)
	small := "diff --git a/small b/small\n+one\n"
	d := &worktree.Diff{Base: "0123456789abcdef", Branch: "worktree-x", Patch: small + big,
		Files: []worktree.FileChange{{Path: "big", Added: 400}, {Path: "small", Added: 1}, {Path: "bin", Binary: true}}}
	const pageBytes = 2000
	sum := summary(d)
	if !strings.Contains(sum, "3 file(s) changed, +401 −0") || !strings.Contains(sum, "| `big` | 400 | 0 |") || !strings.Contains(sum, "| `bin` | binary | |") {
		t.Errorf("summary:\n%s", sum)
	}
	blocks := fileBlocks(d, pageBytes)
	pages := pack(append([]string{sum}, blocks...), pageBytes)
	if len(pages) < 5 || !strings.HasPrefix(pages[0][0], "Branch worktree-x against 0123456789ab") {
		t.Fatalf("%d pages; the first starts %.60q", len(pages), pages[0][0])
	}
	var all strings.Builder
	for i, p := range pages {
		size := 0
		for _, b := range p {
			size += len(b)
			if i > 0 || b != sum {
				all.WriteString(strings.TrimSuffix(strings.TrimPrefix(b, "```diff\n"), "```\n\n"))
			}
		}
		if size > pageBytes && len(p) > 1 {
			t.Errorf("page %d holds %d bytes in %d blocks", i+1, size, len(p))
		}
	}
	if all.String() != small+big {
		t.Errorf("the pages' patch differs from the diff's (%d bytes, want %d)", all.Len(), len(small+big))
	}
}
