// Package history is a session's conversation as steps: the entries a
// session records of its turns (prompts, assistant texts, tool calls with
// a short result), the bounded buffer it keeps them in, the CLI's
// transcript read back into entries, the preamble that replays a lost
// conversation into a fresh one, and a tool input rendered for a person.
//
// It knows the CLI's transcript format and content blocks (claudeagent);
// it must not know sessions, turns, processes, the store or MCP.
package history

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
)

// Entry is one step of a conversation: a prompt, an assistant text, or a
// tool call with a short result.
type Entry struct {
	Kind    string          `json:"kind"` // "prompt", "text" or "tool"
	Text    string          `json:"text,omitempty"`
	Tool    string          `json:"tool,omitempty"`
	ToolID  string          `json:"toolId,omitempty"`
	Input   json.RawMessage `json:"input,omitempty"`
	Result  string          `json:"result,omitempty"`
	IsError bool            `json:"isError,omitempty"`
	Time    time.Time       `json:"time,omitzero"`
	// ID is a prompt's uuid: the one its user message went to the CLI
	// with, by which the CLI knows the prompt's file checkpoint.
	ID string `json:"id,omitempty"`
	// TextBytes is how long Text was before the history in memory cut it
	// (0: it is whole).
	TextBytes int `json:"-"`
}

// Bounds of the history a session keeps in memory: a tool result, the
// text (or tool input) of one entry, and all entries together. What is cut
// or dropped is in the CLI's transcript, which a session reads on demand.
const (
	ResultChars = 500
	entryBytes  = 64 << 10
	MaxBytes    = 1 << 20
)

// Buffer is the conversation as a session keeps it in memory: the newest
// entries, at most MaxBytes of them. Its owner guards it.
type Buffer struct {
	entries []Entry
	bytes   int // what entries hold
	dropped int // entries dropped: the transcript has them
}

// Add appends e, cut to the bound of an entry, and drops the oldest
// entries beyond MaxBytes; transcript names the file that keeps what was
// cut (called only then).
func (b *Buffer) Add(e Entry, transcript func() string) {
	if len(e.Text) > entryBytes {
		e.TextBytes = len(e.Text)
		e.Text = fmt.Sprintf("%s\n[… %d more bytes in the transcript %s]", textcut.Prefix(e.Text, entryBytes), len(e.Text)-entryBytes, transcript())
	}
	if len(e.Input) > entryBytes {
		e.Input, _ = json.Marshal(map[string]string{"truncated": textcut.Prefix(string(e.Input), entryBytes)})
	}
	b.entries = append(b.entries, e)
	b.bytes += entrySize(e)
	n := 0
	for b.bytes > MaxBytes && n < len(b.entries)-1 {
		b.bytes -= entrySize(b.entries[n])
		n++
	}
	if n > 0 {
		b.entries = slices.Delete(b.entries, 0, n)
		b.dropped += n
	}
}

// Set replaces the entries with h (a transcript's), within the bounds.
func (b *Buffer) Set(h []Entry, transcript func() string) {
	*b = Buffer{}
	for _, e := range h {
		b.Add(e, transcript)
	}
}

// Total is how many entries were ever added (held and dropped): the
// absolute index of the next one.
func (b *Buffer) Total() int { return b.dropped + len(b.entries) }

// Since returns a copy of the entries held whose absolute index is n or
// more (those dropped before are gone).
func (b *Buffer) Since(n int) []Entry {
	return slices.Clone(b.entries[min(max(n-b.dropped, 0), len(b.entries)):])
}

// Entries returns a copy of the entries held, oldest first.
func (b *Buffer) Entries() []Entry { return slices.Clone(b.entries) }

// Len is how many entries are held.
func (b *Buffer) Len() int { return len(b.entries) }

// Bytes is about what the entries hold in memory.
func (b *Buffer) Bytes() int { return b.bytes }

// Dropped is how many older entries were dropped (the transcript has
// them).
func (b *Buffer) Dropped() int { return b.dropped }

// entrySize is about what an entry holds in memory.
func entrySize(e Entry) int {
	return len(e.Text) + len(e.Input) + len(e.Result) + len(e.Tool) + len(e.ToolID) + len(e.ID) + 64
}
