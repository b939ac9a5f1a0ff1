package fakeapi

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Request is one HTTP request received by the fake, with the Messages API
// fields decoded from its JSON body.
type Request struct {
	Method   string
	Path     string // URL path without the query, e.g. "/v1/messages"
	Query    string // raw query, e.g. "beta=true"
	Header   http.Header
	Body     []byte // raw (after undoing Content-Encoding: gzip)
	Model    string
	Stream   bool
	System   json.RawMessage // string or array of blocks, as sent
	Tools    []json.RawMessage
	Messages []Message
	Received time.Time // when the server recorded it
}

// Message is one entry of the request's messages array.
type Message struct {
	Role    string
	Content json.RawMessage // string or array of content blocks, as sent
}

// ToolResult is a tool_result content block of a user message.
type ToolResult struct {
	ToolUseID string
	Content   string // text joined with "\n" when content is a list of blocks
	IsError   bool
}

// contentBlock is the subset of content block fields the fake looks at.
type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`    // tool_use
	Name      string          `json:"name"`  // tool_use
	Input     json.RawMessage `json:"input"` // tool_use
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	ToolName  string          `json:"tool_name"` // tool_reference
}

func (r Request) clone() Request {
	c := r
	c.Header = r.Header.Clone()
	c.Body = bytes.Clone(r.Body)
	c.System = bytes.Clone(r.System)
	if r.Tools != nil {
		c.Tools = make([]json.RawMessage, len(r.Tools))
		for i, t := range r.Tools {
			c.Tools[i] = bytes.Clone(t)
		}
	}
	if r.Messages != nil {
		c.Messages = make([]Message, len(r.Messages))
		for i, m := range r.Messages {
			c.Messages[i] = Message{Role: m.Role, Content: bytes.Clone(m.Content)}
		}
	}
	return c
}

// readRequest reads and decodes hr. It always returns a Request (with at
// least Method, Path, Header and Body) so that it can be recorded; the error
// reports a body that could not be read or decoded.
func readRequest(hr *http.Request) (*Request, error) {
	r := &Request{
		Method: hr.Method,
		Path:   hr.URL.Path,
		Query:  hr.URL.RawQuery,
		Header: hr.Header.Clone(),
	}
	body, err := io.ReadAll(hr.Body)
	if err != nil {
		return r, fmt.Errorf("reading body: %w", err)
	}
	if strings.EqualFold(hr.Header.Get("Content-Encoding"), "gzip") {
		if zr, zerr := gzip.NewReader(bytes.NewReader(body)); zerr == nil {
			if plain, perr := io.ReadAll(zr); perr == nil {
				body = plain
			}
		}
	}
	r.Body = body
	if len(bytes.TrimSpace(body)) == 0 {
		return r, nil
	}
	var wire struct {
		Model    string            `json:"model"`
		Stream   bool              `json:"stream"`
		System   json.RawMessage   `json:"system"`
		Tools    []json.RawMessage `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		return r, fmt.Errorf("decoding body: %w", err)
	}
	r.Model, r.Stream, r.System, r.Tools = wire.Model, wire.Stream, wire.System, wire.Tools
	for _, m := range wire.Messages {
		r.Messages = append(r.Messages, Message{Role: m.Role, Content: m.Content})
	}
	return r, nil
}

// blocks decodes the message content as a list of blocks; string content
// becomes a single text block.
func (m Message) blocks() []contentBlock {
	return decodeContent(m.Content)
}

func decodeContent(raw json.RawMessage) []contentBlock {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil
		}
		return []contentBlock{{Type: "text", Text: s}}
	}
	var bs []contentBlock
	if json.Unmarshal(raw, &bs) != nil {
		return nil
	}
	return bs
}

// Text returns the message's text blocks joined with "\n" (string content is
// returned as is), without the <system-reminder> sections the CLI adds (see
// StripSystemReminders). Other blocks are ignored.
func (m Message) Text() string {
	var parts []string
	for _, b := range m.blocks() {
		if b.Type != "text" {
			continue
		}
		if t, stripped := StripSystemReminders(b.Text); !stripped {
			parts = append(parts, b.Text)
		} else if t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

// RawText is like Text but keeps <system-reminder> sections.
func (m Message) RawText() string {
	var parts []string
	for _, b := range m.blocks() {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// StripSystemReminders removes every "<system-reminder>…</system-reminder>"
// section from s. The CLI injects such sections (current date, agent list,
// …) as extra text blocks of user messages. When something was removed the
// result is also trimmed of surrounding white space and stripped is true;
// otherwise s is returned unchanged.
func StripSystemReminders(s string) (out string, stripped bool) {
	const open, closing = "<system-reminder>", "</system-reminder>"
	for {
		i := strings.Index(s, open)
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], closing)
		if j < 0 {
			break
		}
		s = s[:i] + s[i+j+len(closing):]
		stripped = true
	}
	if stripped {
		s = strings.TrimSpace(s)
	}
	return s, stripped
}

// ConversationLen is the number of messages with role "user" or
// "assistant". The CLI may add "system"-role messages to the messages array
// (for example the agent list when the default model is used), which this
// count leaves out.
func (r *Request) ConversationLen() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "user" || m.Role == "assistant" {
			n++
		}
	}
	return n
}

// lastUser returns the last message with role "user", or nil.
func (r *Request) lastUser() *Message {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return &r.Messages[i]
		}
	}
	return nil
}

// LastUserText returns the text of the last user message: its string
// content, or its text blocks joined with "\n". tool_result blocks and
// <system-reminder> sections injected by the CLI are ignored (see
// Message.Text).
func (r *Request) LastUserText() string {
	m := r.lastUser()
	if m == nil {
		return ""
	}
	return m.Text()
}

// LastToolResults returns the tool_result blocks of the last user message.
func (r *Request) LastToolResults() []ToolResult {
	m := r.lastUser()
	if m == nil {
		return nil
	}
	return toolResults(m)
}
