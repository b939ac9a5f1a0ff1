package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/beneath"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
)

// MaxTranscriptBytes caps what the server reads of a transcript, a file
// the session itself may write (as the CLI caps a line).
const MaxTranscriptBytes = 256 << 20

// TranscriptPath is where the CLI keeps the transcript of a Claude session
// started in cwd: <config dir>/projects/<cwd with every character other
// than ASCII letters and digits replaced by '-'>/<id>.jsonl, where the
// config dir is $CLAUDE_CONFIG_DIR or $HOME/.claude (env first, then the
// server's environment). The session may write its config directory, so
// the file is named beneath it: the server opens it without following a
// link (package beneath).
func TranscriptPath(env map[string]string, cwd, claudeSessionID string) beneath.Path {
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
	if claudeSessionID == "" {
		return beneath.Path{}
	}
	return beneath.Path{Dir: dir, Rel: filepath.Join("projects", slug, claudeSessionID+".jsonl")}
}

// Load reads a CLI transcript into entries, at most MaxTranscriptBytes
// (what lies beyond is left out, and the error says so). A missing file is
// no history; a link, a named pipe or a directory in its place is an error
// (package beneath).
func Load(path beneath.Path) ([]Entry, error) {
	if path.IsZero() {
		return nil, nil
	}
	f, err := beneath.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Entry
	tools := map[string]int{}
	r := bufio.NewReaderSize(io.LimitReader(f, MaxTranscriptBytes), 64<<10)
	read := int64(0)
	for {
		line, err := r.ReadBytes('\n')
		read += int64(len(line))
		if len(line) > 0 {
			out = appendTranscriptLine(out, tools, line)
		}
		if err != nil {
			break
		}
	}
	if read >= MaxTranscriptBytes {
		return out, fmt.Errorf("the transcript %s: read its first %d bytes: %w", path, read, beneath.ErrTooLarge)
	}
	return out, nil
}

func appendTranscriptLine(out []Entry, tools map[string]int, line []byte) []Entry {
	var e struct {
		Type      string    `json:"type"`
		UUID      string    `json:"uuid"`
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
				out = append(out, Entry{Kind: "prompt", Text: b.Text, Time: e.Timestamp, ID: e.UUID})
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
