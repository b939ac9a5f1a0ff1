package resources

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
)

func TestParse(t *testing.T) {
	for uri, want := range map[string]ref{
		prefix + "abc/transcript":         {session: "abc"},
		prefix + "abc/transcript?page=12": {session: "abc", page: 12},
		prefix + "abc/answer":             {session: "abc", answer: true},
		prefix + "abc/diff":               {session: "abc", diff: true},
		prefix + "abc/diff?page=3":        {session: "abc", diff: true, page: 3},
	} {
		if got, err := parse(uri); err != nil || got != want {
			t.Errorf("parse(%q) = %+v, %v; want %+v", uri, got, err, want)
		}
	}
	for _, uri := range []string{"test://x", "claude-agent-mcp://other/abc/answer", "file:///tmp"} {
		if _, err := parse(uri); err != errForeign {
			t.Errorf("parse(%q): %v, want errForeign", uri, err)
		}
	}
	for _, uri := range []string{prefix, prefix + "abc", prefix + "abc/", prefix + "abc/log", prefix + "/answer", prefix + "a%2Fb/answer",
		prefix + "abc/answer?page=1", prefix + "abc/transcript?page=0", prefix + "abc/transcript?page=01", prefix + "abc/transcript?page=-1",
		prefix + "abc/transcript?page=1&x=2", prefix + "abc/transcript?p=1", prefix + "abc/transcript/x", prefix + "abc/diff?page=0", prefix + "abc/diffs"} {
		_, err := parse(uri)
		if err == nil || err == errForeign || !strings.Contains(err.Error(), "malformed resource URI") {
			t.Errorf("parse(%q): %v, want a malformed URI error", uri, err)
		}
	}
}

// entries is a history of n steps of every kind, of growing sizes.
func entries(n int) []history.Entry {
	var out []history.Entry
	for i := range n {
		switch i % 4 {
		case 0:
			out = append(out, history.Entry{Kind: "prompt", Text: fmt.Sprintf("prompt %d %s", i, strings.Repeat("p", i*7))})
		case 1:
			input, _ := json.Marshal(map[string]string{"command": fmt.Sprintf("echo %d", i)})
			out = append(out, history.Entry{Kind: "tool", Tool: "Bash", Input: input, Result: "line\nline", IsError: i%8 == 1})
		case 2:
			out = append(out, history.Entry{Kind: "steer", Text: fmt.Sprintf("steer %d", i)})
		default:
			out = append(out, history.Entry{Kind: "text", Text: fmt.Sprintf("answer %d %s", i, strings.Repeat("a", i*13))})
		}
	}
	return out
}

// TestPaginate: pages hold at most the cap, every entry once and in order;
// an entry longer than a page is cut to fit; a full page stays the same
// as the history grows.
func TestPaginate(t *testing.T) {
	const pageBytes = 400
	all := entries(60)
	all = append(all, history.Entry{Kind: "text", Text: strings.Repeat("x", 5*pageBytes)})
	var prev []page
	for n := range len(all) + 1 {
		pages := paginate(all[:n], pageBytes)
		next := 0
		for i, p := range pages {
			size := 0
			for _, b := range p.blocks {
				size += len(b)
			}
			if size > pageBytes {
				t.Fatalf("%d entries: page %d holds %d bytes", n, i+1, size)
			}
			if p.first != next {
				t.Fatalf("%d entries: page %d starts at %d, want %d", n, i+1, p.first, next)
			}
			next += len(p.blocks)
		}
		if next != n {
			t.Fatalf("%d entries: the pages hold %d", n, next)
		}
		for i := 0; i+1 < len(prev); i++ {
			if !slices.Equal(prev[i].blocks, pages[i].blocks) {
				t.Fatalf("%d entries: full page %d changed", n, i+1)
			}
		}
		prev = pages
	}
	if len(prev) < 5 {
		t.Errorf("%d pages for %d entries of %d bytes a page", len(prev), len(all), pageBytes)
	}
	last := prev[len(prev)-1].blocks
	if b := last[len(last)-1]; !strings.HasSuffix(b, "…\n\n") {
		t.Errorf("the long entry is not cut: %q…", b[:40])
	}
	if got := render(all[1], pageBytes); got != "- Tool `Bash`: $ echo 1 (error) → line line\n\n" {
		t.Errorf("a tool call renders as %q", got)
	}
}
