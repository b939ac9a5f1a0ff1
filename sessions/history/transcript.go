package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
)

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

// Load reads a CLI transcript into entries. A missing file is no history.
func Load(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Entry
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

func appendTranscriptLine(out []Entry, tools map[string]int, line []byte) []Entry {
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
				out = append(out, Entry{Kind: "prompt", Text: b.Text, Time: e.Timestamp})
			}
		case e.Type == "user" && b.Type == "tool_result":
			if i, ok := tools[b.ToolUseID]; ok {
				out[i].Result, out[i].IsError = textcut.Cut(b.ResultText(), ResultChars), b.IsError
			}
		case e.Type == "assistant" && b.Type == "text":
			out = append(out, Entry{Kind: "text", Text: b.Text, Time: e.Timestamp})
		case e.Type == "assistant" && b.Type == "tool_use":
			tools[b.ID] = len(out)
			out = append(out, Entry{Kind: "tool", Tool: b.Name, ToolID: b.ID, Input: b.Input, Time: e.Timestamp})
		}
	}
	return out
}
