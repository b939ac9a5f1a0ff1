package fakeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Scripting several CLIs that share one fake API.
//
// A test that runs the real interactive CLI as an MCP host of a server that
// itself starts CLIs (children) has two kinds of callers on one fake API.
// They are told apart by the entrypoint each CLI reports (see
// Request.Entrypoint): the interactive CLI says "cli", the CLIs that
// claude-agent-mcp starts say "claude-agent-mcp" (claudeagent.Entrypoint).
// Within one caller, the requests of its main conversation (see
// Request.IsMainConversation) are told apart from side calls (a title, a
// quota probe, a classifier…), which a script answers harmlessly.
//
// What CLI 2.1.330 sends, as observed:
//   - User-Agent "claude-cli/2.1.330 (external, <entrypoint>)" on every
//     model call, and a first system block "x-anthropic-billing-header:
//     cc_version=2.1.330.<hash>; cc_entrypoint=<entrypoint>;";
//   - the interactive CLI's main conversation: system identity "You are
//     Claude Code, Anthropic's official CLI for Claude.", the built-in
//     tools, MCP tools deferred behind ToolSearch (only after the model
//     called ToolSearch with "select:<name>" does the tool appear in the
//     tools array, and the tool_result carries a tool_reference block);
//   - a child (-p, stream-json) conversation: "You are a Claude agent, built
//     on Anthropic's Claude Agent SDK.";
//   - with CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 neither sends side
//     calls (no title generation, no quota probe, no count_tokens).

// EntrypointCLI is the entrypoint of the interactive CLI (a terminal).
const EntrypointCLI = "cli"

// MainIdentities are the first lines of the system prompts of the CLI's
// main conversations: interactive, SDK/print (-p) with and without the
// Claude Code preset.
var MainIdentities = []string{
	"You are Claude Code, Anthropic's official CLI for Claude",
	"You are a Claude agent, built on Anthropic's Claude Agent SDK",
}

const billingPrefix = "x-anthropic-billing-header:"

// Entrypoint returns the entrypoint the CLI reported for r: the first item
// after "external, " in its User-Agent "claude-cli/<version> (external,
// <entrypoint>[, …])", else cc_entrypoint of the x-anthropic-billing-header
// system block; "" when neither is there (a warm-up HEAD, a foreign client).
func (r *Request) Entrypoint() string {
	ua := r.Header.Get("User-Agent")
	if strings.HasPrefix(ua, "claude-cli/") {
		if _, rest, ok := strings.Cut(ua, "(external, "); ok {
			if i := strings.IndexAny(rest, ",)"); i >= 0 {
				return strings.TrimSpace(rest[:i])
			}
		}
	}
	return r.billingField("cc_entrypoint")
}

// CLIVersion returns the version in the User-Agent "claude-cli/<version>
// (…)", else cc_version of the billing header without its last dot-separated
// part (a hash); "" when neither is there.
func (r *Request) CLIVersion() string {
	if v, ok := strings.CutPrefix(r.Header.Get("User-Agent"), "claude-cli/"); ok {
		v, _, _ = strings.Cut(v, " ")
		return v
	}
	v := r.billingField("cc_version")
	if i := strings.LastIndexByte(v, '.'); i >= 0 && strings.Count(v, ".") > 2 {
		v = v[:i]
	}
	return v
}

// billingField returns a field of the x-anthropic-billing-header system
// block ("k1=v1; k2=v2;").
func (r *Request) billingField(name string) string {
	for _, text := range r.systemTexts() {
		rest, ok := strings.CutPrefix(text, billingPrefix)
		if !ok {
			continue
		}
		for _, kv := range strings.Split(rest, ";") {
			if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == name {
				return v
			}
		}
	}
	return ""
}

// systemTexts returns the system prompt: the string, or the text of each
// block.
func (r *Request) systemTexts() []string {
	var out []string
	for _, b := range decodeContent(r.System) {
		if b.Type == "text" {
			out = append(out, b.Text)
		}
	}
	return out
}

// SystemText returns the system prompt as one string (blocks joined with
// "\n"), the billing header block included.
func (r *Request) SystemText() string { return strings.Join(r.systemTexts(), "\n") }

// ToolNames returns the names of the tools the request declares, in order.
func (r *Request) ToolNames() []string {
	var out []string
	for _, raw := range r.Tools {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &t) == nil {
			out = append(out, t.Name)
		}
	}
	return out
}

// HasTool reports whether the request declares a tool of that name.
func (r *Request) HasTool(name string) bool { return slices.Contains(r.ToolNames(), name) }

// IsMainConversation reports whether r is a model call of a CLI's main
// conversation rather than a side call: a POST /v1/messages whose system
// prompt starts (after the billing header block) with one of
// MainIdentities. Title generation, quota probes, classifiers and
// sub-agents have system prompts of their own, or none. (A CLI run with
// --system-prompt replaces the identity too: script such a CLI's side
// calls like its main ones.)
func (r *Request) IsMainConversation() bool {
	if r.Path != PathMessages || r.Method != http.MethodPost {
		return false
	}
	for _, text := range r.systemTexts() {
		text = strings.TrimSpace(text)
		if text == "" || strings.HasPrefix(text, billingPrefix) {
			continue
		}
		for _, id := range MainIdentities {
			if strings.HasPrefix(text, id) {
				return true
			}
		}
		return false
	}
	return false
}

// ToolUseBlock is a tool_use block of an assistant message in a request.
type ToolUseBlock struct {
	ID    string
	Name  string
	Input json.RawMessage
}

// ToolUses returns the tool_use blocks of every assistant message of r, in
// order: the calls the model made earlier in the conversation.
func (r *Request) ToolUses() []ToolUseBlock {
	var out []ToolUseBlock
	for _, m := range r.Messages {
		if m.Role != "assistant" {
			continue
		}
		for _, b := range m.blocks() {
			if b.Type == "tool_use" {
				out = append(out, ToolUseBlock{ID: b.ID, Name: b.Name, Input: b.Input})
			}
		}
	}
	return out
}

// ToolResults returns the tool_result blocks of every user message of r, in
// order (LastToolResults has only the last message's).
func (r *Request) ToolResults() []ToolResult {
	var out []ToolResult
	for i := range r.Messages {
		if r.Messages[i].Role == "user" {
			out = append(out, toolResults(&r.Messages[i])...)
		}
	}
	return out
}

// ToolResult returns the tool_result for the tool_use id anywhere in r.
func (r *Request) ToolResult(id string) (ToolResult, bool) {
	for _, tr := range r.ToolResults() {
		if tr.ToolUseID == id {
			return tr, true
		}
	}
	return ToolResult{}, false
}

// ToolReferences returns the tool names of the tool_reference blocks in the
// tool_result for the tool_use id: what a ToolSearch call loaded.
func (r *Request) ToolReferences(id string) []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role != "user" {
			continue
		}
		for _, b := range m.blocks() {
			if b.Type != "tool_result" || b.ToolUseID != id {
				continue
			}
			for _, c := range decodeContent(b.Content) {
				if c.Type == "tool_reference" {
					out = append(out, c.ToolName)
				}
			}
		}
	}
	return out
}

// toolResults decodes the tool_result blocks of m.
func toolResults(m *Message) []ToolResult {
	var out []ToolResult
	for _, b := range m.blocks() {
		if b.Type != "tool_result" {
			continue
		}
		tr := ToolResult{ToolUseID: b.ToolUseID, IsError: b.IsError}
		var parts []string
		for _, c := range decodeContent(b.Content) {
			if c.Type == "text" {
				parts = append(parts, c.Text)
			}
		}
		tr.Content = strings.Join(parts, "\n")
		out = append(out, tr)
	}
	return out
}

// ToolUse is a tool_use block calling the tool name with input (marshalled
// to JSON; json.RawMessage is sent as is). An empty id gets
// toolu_fake_<n>; give one to find the call's tool_result later.
func ToolUse(id, name string, input any) Block {
	return Block{Type: "tool_use", ID: id, Name: name, Input: input}
}

// ToolUseReply is a reply that calls tools: an optional text first (""
// for none), then the tool_use blocks, several for a parallel fan-out. Its
// stop reason is "tool_use".
func ToolUseReply(text string, calls ...Block) *Reply {
	r := &Reply{}
	if text != "" {
		r.Blocks = append(r.Blocks, Block{Type: "text", Text: text})
	}
	r.Blocks = append(r.Blocks, calls...)
	return r
}

// SideText is the text of SideReply.
const SideText = "ok"

// SideReply answers a side call harmlessly: a short text.
func SideReply(*Request) *Reply { return TextReply(SideText) }

// Caller scripts the requests of the CLIs with one entrypoint.
type Caller struct {
	// Main answers the requests of their main conversations; nil, or a nil
	// Reply, means the keyword behaviour (DefaultReply).
	Main func(*Request) *Reply
	// Side answers every other request (side calls); nil means SideReply,
	// and a nil Reply the keyword behaviour.
	Side func(*Request) *Reply
}

// Script routes requests by the caller's entrypoint. Requests whose
// entrypoint is not in Callers get the keyword behaviour.
type Script map[string]Caller

// SetScript installs s as the server's handler (see SetHandler). It
// replaces any handler set before.
func (s *Server) SetScript(sc Script) {
	s.SetHandler(func(r *Request) *Reply {
		c, ok := sc[r.Entrypoint()]
		if !ok {
			return nil
		}
		if r.IsMainConversation() {
			if c.Main == nil {
				return nil
			}
			return c.Main(r)
		}
		if c.Side == nil {
			return SideReply(r)
		}
		return c.Side(r)
	})
}

// Turns answers a main conversation with one reply per request, in order:
// the n-th request gets replies[n]. It is safe for concurrent use. Past the
// end, requests get the keyword behaviour (a nil Reply).
func Turns(replies ...func(*Request) *Reply) func(*Request) *Reply {
	var mu sync.Mutex
	n := 0
	return func(r *Request) *Reply {
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		if i >= len(replies) || replies[i] == nil {
			return nil
		}
		return replies[i](r)
	}
}

// WaitFor blocks until a request (of any path) for which match reports
// true has been recorded and returns the first such request. It fails when
// ctx ends or the server is closed first.
func (s *Server) WaitFor(ctx context.Context, match func(*Request) bool) (Request, error) {
	seen := 0
	for {
		s.mu.Lock()
		for ; seen < len(s.requests); seen++ {
			if match(&s.requests[seen]) {
				r := s.requests[seen].clone()
				s.mu.Unlock()
				return r, nil
			}
		}
		ch, closed := s.changed, s.closed
		s.mu.Unlock()
		if closed {
			return Request{}, ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return Request{}, fmt.Errorf("fakeapi: waiting for a matching request (%d seen): %w", seen, ctx.Err())
		case <-s.done:
		}
	}
}

// Filter returns the recorded requests for which match reports true, in
// arrival order.
func (s *Server) Filter(match func(*Request) bool) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for i := range s.requests {
		if match(&s.requests[i]) {
			out = append(out, s.requests[i].clone())
		}
	}
	return out
}

// From matches the main-conversation requests of the CLIs with that
// entrypoint, for WaitFor and Filter.
func From(entrypoint string) func(*Request) bool {
	return func(r *Request) bool { return r.IsMainConversation() && r.Entrypoint() == entrypoint }
}

// WithToolResult matches the main-conversation requests of the CLIs with
// that entrypoint that carry a tool_result for the tool_use id.
func WithToolResult(entrypoint, id string) func(*Request) bool {
	return func(r *Request) bool {
		if !From(entrypoint)(r) {
			return false
		}
		_, ok := r.ToolResult(id)
		return ok
	}
}
