package sessions

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
)

// TestHistoryBounded: the history kept in memory stays within its bound
// however large the answers (defect: 12 turns of 2 MB answers kept 25 MB);
// what was dropped is read from the transcript on demand, or named when
// the transcript cannot be read.
func TestHistoryBounded(t *testing.T) {
	m := newManager(t, Config{})
	s := newSession(m, CreateOptions{Cwd: t.TempDir()})
	big := strings.Repeat("x", 2<<20)
	s.mu.Lock()
	for range 40 {
		s.addHistoryLocked(history.Entry{Kind: "prompt", Text: "go on"})
		s.addHistoryLocked(history.Entry{Kind: "text", Text: big})
	}
	held, bytes, dropped := s.history.Len(), s.history.Bytes(), s.history.Dropped()
	path := s.transcriptPathLocked().String()
	s.mu.Unlock()
	total := 0
	for _, e := range s.History() {
		total += len(e.Text)
	}
	if bytes > history.MaxBytes || dropped == 0 {
		t.Errorf("history holds %d bytes in %d entries (%d dropped), want at most %d", bytes, held, dropped, history.MaxBytes)
	}
	if total > 2*history.MaxBytes {
		t.Errorf("History returned %d bytes of text", total)
	}
	h := s.History()
	if !strings.Contains(h[0].Text, "older entries are not kept in memory") || !strings.Contains(h[0].Text, path) {
		t.Errorf("the first entry without a transcript = %q, want a note naming it", h[0].Text)
	}
	if last := h[len(h)-1].Text; !strings.Contains(last, "more bytes in the transcript") {
		t.Errorf("a 2 MB answer is kept whole in memory: %d bytes", len(last))
	}

	// With the transcript there, History reads the whole conversation.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := range 30 {
		for _, msg := range []map[string]any{
			{"type": "user", "message": map[string]any{"content": "prompt " + string(rune('a'+i%26))}},
			{"type": "assistant", "message": map[string]any{"content": []any{map[string]any{"type": "text", "text": "answer"}}}},
		} {
			b, _ := json.Marshal(msg)
			lines = append(lines, string(b))
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if h := s.History(); len(h) != 60 || h[0].Text != "prompt a" {
		t.Errorf("History with the transcript: %d entries, first %q; want its 60", len(h), h[0].Text)
	}
}
