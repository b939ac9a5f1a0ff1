package sessions

import (
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// TestProgressText: Progress.Text is the texts so far and the message
// being written, joined by blank lines and cut to ProgressTextBytes, the
// same as cutting the whole join (the oracle below) whatever the sizes,
// also with a character across the cut; and a message being written is
// kept only as far as that cut needs, not its megabytes.
func TestProgressText(t *testing.T) {
	const n = ProgressTextBytes
	tests := []struct {
		name   string
		texts  []string // whole texts, in order
		deltas []string // then the message being written
	}{
		{"nothing", nil, nil},
		{"a short text", []string{"hello"}, nil},
		{"a text and deltas", []string{"hello"}, []string{"wor", "ld"}},
		{"deltas only", nil, []string{"a", "b", "c"}},
		{"texts just within the cut", []string{strings.Repeat("a", n-7), "bcdef"}, nil},
		{"texts exactly at the cut", []string{strings.Repeat("a", n-7), "bcdefg"}, nil},
		{"texts one byte past it", []string{strings.Repeat("a", n-7), "bcdefgh"}, nil},
		{"the separator at the cut", []string{strings.Repeat("a", n-1), "b"}, nil},
		{"a 2 MB text", []string{strings.Repeat("0123456789", 200_000)}, []string{"more"}},
		{"a character across the cut", []string{strings.Repeat("é", n)}, nil},
		{"deltas across the cut", []string{"x"}, []string{strings.Repeat("é", n/2-2), "€€€", strings.Repeat("z", 10)}},
		{"2 MB of deltas", nil, deltas(64<<10, 31)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRun(runConfig{})
			for _, s := range tc.texts {
				r.OnEvent(turn.Event{Kind: turn.EventText, Text: s})
			}
			for _, d := range tc.deltas {
				r.OnEvent(turn.Event{Kind: turn.EventTextDelta, Text: d})
			}
			all := tc.texts
			if len(tc.deltas) > 0 {
				all = append(all[:len(all):len(all)], strings.Join(tc.deltas, ""))
			}
			want := textcut.Cut(strings.Join(all, "\n\n"), n)
			if got := r.Progress().Text; got != want {
				t.Errorf("Progress().Text: %d bytes %.40q…%q, want %d bytes %.40q…%q", len(got), got, tail(got), len(want), want, tail(want))
			}
			longest := 0
			for _, d := range tc.deltas {
				longest = max(longest, len(d))
			}
			if kept := r.partial.Len(); kept > n+1+longest {
				t.Errorf("the run keeps %d bytes of the message being written; want at most %d", kept, n+1+longest)
			}
		})
	}
}

func deltas(size, count int) []string {
	out := make([]string, count)
	for i := range out {
		out[i] = strings.Repeat(string(rune('a'+i%26)), size)
	}
	return out
}

func tail(s string) string { return s[max(len(s)-12, 0):] }
