package history

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
)

// replayMaxBytes bounds the recorded history that seeds a fresh
// conversation after a lost transcript.
const replayMaxBytes = 24 << 10

// Preamble renders the recorded conversation for a fresh start: the
// earlier prompts, answers and tool calls, newest kept when it must be cut.
func Preamble(history []Entry) string {
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

// SummarizeInput renders a tool input for a person in at most n bytes: the
// Bash command ("$ ls"), the file path, or compact JSON.
func SummarizeInput(input json.RawMessage, n int) string {
	var m map[string]any
	if json.Unmarshal(input, &m) == nil {
		if c, ok := m["command"].(string); ok && c != "" {
			return textcut.Cut("$ "+c, n)
		}
		for _, k := range []string{"file_path", "notebook_path", "path", "pattern", "url", "query", "prompt"} {
			if s, ok := m[k].(string); ok && s != "" {
				return textcut.Cut(s, n)
			}
		}
	}
	return textcut.Cut(string(input), n)
}
