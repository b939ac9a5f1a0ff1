package sessions

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
)

// HistoryEntry is one step of a conversation: a prompt, an assistant text,
// or a tool call with a short result.
type HistoryEntry struct {
	Kind    string          `json:"kind"` // "prompt", "text" or "tool"
	Text    string          `json:"text,omitempty"`
	Tool    string          `json:"tool,omitempty"`
	ToolID  string          `json:"toolId,omitempty"`
	Input   json.RawMessage `json:"input,omitempty"`
	Result  string          `json:"result,omitempty"`
	IsError bool            `json:"isError,omitempty"`
	Time    time.Time       `json:"time,omitzero"`
	// TextBytes is how long Text was before the history in memory cut it
	// (0: it is whole).
	TextBytes int `json:"-"`
}

// Bounds of the history a session keeps in memory: a tool result, the
// text (or tool input) of one entry, and all entries together. What is cut
// or dropped is in the CLI's transcript, which History reads on demand.
const (
	historyResultChars = 500
	historyEntryBytes  = 64 << 10
	historyMaxBytes    = 1 << 20
)

// History returns the conversation so far, oldest first. For a session
// that continues an earlier conversation (resumeSessionId, or restored
// after a restart) it starts with what the CLI's transcript held then.
// Once older entries were dropped from memory (historyMaxBytes), they are
// read from the transcript: the whole conversation as the CLI recorded it.
func (s *Session) History() []HistoryEntry {
	s.mu.Lock()
	mem := append([]HistoryEntry(nil), s.history...)
	dropped := s.historyDropped
	path := s.transcriptPath()
	s.mu.Unlock()
	if dropped == 0 {
		return mem
	}
	if all, err := loadTranscript(path); err == nil && len(all) >= len(mem) {
		return all
	}
	note := HistoryEntry{Kind: "text", Text: fmt.Sprintf("[%d older entries are not kept in memory, and the transcript %s that holds them cannot be read]", dropped, path)}
	return append([]HistoryEntry{note}, mem...)
}

// recordTurn appends a finished turn to the history; s.mu is held.
func (s *Session) recordTurn(prompt string, started time.Time, t *turn) {
	s.addHistoryLocked(HistoryEntry{Kind: "prompt", Text: prompt, Time: started})
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.steps {
		if e.Kind == "tool" {
			if i, ok := t.toolIndex[e.ToolID]; ok {
				inv := t.tools[i]
				e.Result, e.IsError = textcut.Cut(inv.Output, historyResultChars), inv.IsError
			}
		}
		s.addHistoryLocked(e)
	}
}

// addHistoryLocked appends e, cut to historyEntryBytes, and drops the
// oldest entries beyond historyMaxBytes; s.mu is held.
func (s *Session) addHistoryLocked(e HistoryEntry) {
	if len(e.Text) > historyEntryBytes {
		e.TextBytes = len(e.Text)
		e.Text = fmt.Sprintf("%s\n[… %d more bytes in the transcript %s]", textcut.Prefix(e.Text, historyEntryBytes), len(e.Text)-historyEntryBytes, s.transcriptPath())
	}
	if len(e.Input) > historyEntryBytes {
		e.Input, _ = json.Marshal(map[string]string{"truncated": textcut.Prefix(string(e.Input), historyEntryBytes)})
	}
	s.history = append(s.history, e)
	s.historyBytes += entrySize(e)
	n := 0
	for s.historyBytes > historyMaxBytes && n < len(s.history)-1 {
		s.historyBytes -= entrySize(s.history[n])
		n++
	}
	if n > 0 {
		s.history = slices.Delete(s.history, 0, n)
		s.historyDropped += n
	}
}

// setHistoryLocked replaces the history with h (a transcript's), within
// the bounds; s.mu is held.
func (s *Session) setHistoryLocked(h []HistoryEntry) {
	s.history, s.historyBytes, s.historyDropped = nil, 0, 0
	for _, e := range h {
		s.addHistoryLocked(e)
	}
}

// entrySize is about what an entry holds in memory.
func entrySize(e HistoryEntry) int {
	return len(e.Text) + len(e.Input) + len(e.Result) + len(e.Tool) + len(e.ToolID) + 64
}

// TranscriptPath is where the CLI keeps the transcript of a Claude session
// started in cwd: <config dir>/projects/<cwd with every character other
// than ASCII letters and digits replaced by '-'>/<id>.jsonl, where the
// config dir is $CLAUDE_CONFIG_DIR or $HOME/.claude (env first, then the
// server's environment).
func TranscriptPath(env map[string]string, cwd, claudeSessionID string) string {
	lookup := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	dir := lookup("CLAUDE_CONFIG_DIR")
	if dir == "" {
		home := lookup("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		dir = filepath.Join(home, ".claude")
	}
	slug := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, cwd)
	return filepath.Join(dir, "projects", slug, claudeSessionID+".jsonl")
}

// transcriptPath is this session's transcript; s.mu is held.
func (s *Session) transcriptPath() string {
	env := mergeEnv(s.m.cfg.Env, s.profileEnv, s.m.ownerEnv(s.opts.Owner), s.opts.Env)
	id := s.claudeSessionID
	if s.forkPending || id == "" {
		id = s.opts.ResumeSessionID // the fork's own transcript does not exist yet
	}
	return TranscriptPath(env, s.cwdLocked(), id)
}

// TranscriptPath is the file in which the CLI keeps this session's whole
// conversation.
func (s *Session) TranscriptPath() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.transcriptPath()
}

// loadTranscript reads a CLI transcript into history entries. A missing
// file is no history.
func loadTranscript(path string) ([]HistoryEntry, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []HistoryEntry
	tools := map[string]int{}
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			out = appendTranscriptLine(out, tools, line)
		}
		if err != nil {
			break
		}
	}
	return out, nil
}

func appendTranscriptLine(out []HistoryEntry, tools map[string]int, line []byte) []HistoryEntry {
	var e struct {
		Type      string    `json:"type"`
		IsMeta    bool      `json:"isMeta"`
		Timestamp time.Time `json:"timestamp"`
		Message   struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &e) != nil || e.IsMeta {
		return out
	}
	var blocks []claudeagent.ContentBlock
	var text string
	if json.Unmarshal(e.Message.Content, &text) == nil {
		blocks = []claudeagent.ContentBlock{{Type: "text", Text: text}}
	} else if json.Unmarshal(e.Message.Content, &blocks) != nil {
		return out
	}
	for _, b := range blocks {
		switch {
		case e.Type == "user" && b.Type == "text":
			if t := strings.TrimSpace(b.Text); t != "" && !strings.HasPrefix(t, "<") {
				out = append(out, HistoryEntry{Kind: "prompt", Text: b.Text, Time: e.Timestamp})
			}
		case e.Type == "user" && b.Type == "tool_result":
			if i, ok := tools[b.ToolUseID]; ok {
				out[i].Result, out[i].IsError = textcut.Cut(b.ResultText(), historyResultChars), b.IsError
			}
		case e.Type == "assistant" && b.Type == "text":
			out = append(out, HistoryEntry{Kind: "text", Text: b.Text, Time: e.Timestamp})
		case e.Type == "assistant" && b.Type == "tool_use":
			tools[b.ID] = len(out)
			out = append(out, HistoryEntry{Kind: "tool", Tool: b.Name, ToolID: b.ID, Input: b.Input, Time: e.Timestamp})
		}
	}
	return out
}

// replayMaxBytes bounds the recorded history that seeds a fresh
// conversation after a lost transcript.
const replayMaxBytes = 24 << 10

// canReplay reports whether the session has a recorded conversation to
// seed a fresh one with.
func (s *Session) canReplay() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.history) > 0
}

// replayPreamble renders the recorded conversation for a fresh start: the
// earlier prompts, answers and tool calls, newest kept when it must be cut.
func replayPreamble(history []HistoryEntry) string {
	var turns []string
	for _, e := range history {
		switch e.Kind {
		case "prompt":
			turns = append(turns, "User: "+textcut.Cut(e.Text, 2000))
		case "text":
			turns = append(turns, "Assistant: "+textcut.Cut(e.Text, 2000))
		case "tool":
			line := fmt.Sprintf("Assistant used %s (%s)", e.Tool, SummarizeInput(e.Input, 200))
			if e.Result != "" {
				line += " → " + textcut.Cut(e.Result, 300)
			}
			turns = append(turns, line)
		}
	}
	size, first := 0, len(turns)
	for first > 0 && size+len(turns[first-1]) < replayMaxBytes {
		first--
		size += len(turns[first]) + 2
	}
	var b strings.Builder
	b.WriteString("[This conversation was interrupted and its record was lost, so it is restored here from notes. ")
	if first > 0 {
		fmt.Fprintf(&b, "The %d oldest steps are left out. ", first)
	}
	b.WriteString("The earlier part of the conversation:]\n\n")
	b.WriteString(strings.Join(turns[first:], "\n\n"))
	b.WriteString("\n\n[End of the restored part. The new message follows.]\n\n")
	return b.String()
}
