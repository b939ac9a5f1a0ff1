// Package resulttext is what a caller reads, in words, of a query and its
// session: a result's text (Result: the final text, how the turn ended,
// the usage limit, the questions the model asked, the ids), a running
// query's progress and its wait for a usage limit's reset, a permission
// question or the model's clarifying questions, and the usage limit in a
// session's listing, a model's name; a text as a tool result (Tool).
// Times of a limit are RFC 3339 in structured fields and "limited until …
// (in …, the 5-hour limit)" in texts.
//
// It knows turns, runs and sessions' snapshots (turn.Result, sessions.Progress,
// sessions.Info), the model's questions (claudeagent.Questions) and the MCP
// content types; it must not know the tools,
// their handlers, tasks or transports, which call it.
package resulttext

import (
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// Result is the text content: the final text, with a line naming the
// Claude session id (some clients read only the text). A final text that
// only repeats the failure (the CLI's result text is its error, as in
// "Not logged in") is not said twice.
func Result(sessionID string, r *turn.Result) string {
	var b strings.Builder
	failure := ""
	switch {
	case r.TimedOut:
		b.WriteString("The query timed out and was interrupted.\n\n")
	case r.Interrupted:
		b.WriteString("The query was interrupted.\n\n")
	case r.IsError && r.ErrorText != "":
		fmt.Fprintf(&b, "The turn failed: %s\n\n", r.ErrorText)
		failure = strings.TrimSpace(r.ErrorText)
	}
	limitLines(&b, r)
	questionLines(&b, r)
	if r.Recovered == "replayed" {
		b.WriteString("(The conversation's record had been lost, so it was restored from notes: Claude Code's memory of earlier turns is rebuilt, not exact.)\n\n")
	}
	if r.FinalText != "" {
		if strings.TrimSpace(r.FinalText) != failure {
			b.WriteString(r.FinalText)
		}
	} else if !r.IsError {
		b.WriteString("(Claude Code produced no final text.)")
	}
	ids := fmt.Sprintf("[sessionId %s · claudeSessionId %s]", sessionID, r.ClaudeSessionID)
	if body := strings.Trim(b.String(), "\n"); body != "" {
		return body + "\n\n" + ids
	}
	return ids
}

// Permission tells a person what is being asked.
func Permission(pr *turn.PermissionRequest) string {
	if qs, ok := claudeagent.Questions(pr.ToolName, pr.Input); ok {
		return Questions(pr, qs)
	}
	var b strings.Builder
	name := pr.ToolName
	if pr.DisplayName != "" && pr.DisplayName != pr.ToolName {
		name += " (" + pr.DisplayName + ")"
	}
	fmt.Fprintf(&b, "Claude Code wants to use %s", name)
	if s := history.SummarizeInput(pr.Input, 500); s != "" && s != "{}" {
		fmt.Fprintf(&b, ": %s", s)
	}
	if pr.Description != "" && !strings.Contains(b.String(), pr.Description) {
		fmt.Fprintf(&b, "\nPurpose: %s", pr.Description)
	}
	if pr.BlockedPath != "" {
		fmt.Fprintf(&b, "\nPath: %s", pr.BlockedPath)
	}
	if pr.DecisionReason != "" {
		fmt.Fprintf(&b, "\nWhy it asks: %s", pr.DecisionReason)
	}
	fmt.Fprintf(&b, "\nSession %s, working in %s.", pr.SessionID, pr.Cwd)
	return b.String()
}

// Progress tells a person what a running query is doing: the same
// facts as the progress heartbeat, and the latest step.
func Progress(p sessions.Progress) string {
	if line := Parked(p); line != "" {
		return line
	}
	msg := fmt.Sprintf("Running for %s: %d API turn(s), %d tool call(s) so far.", p.Elapsed.Round(time.Second), p.Turns, p.ToolsUsed)
	if p.LastStep != "" {
		msg += " Latest: " + textcut.Cut(p.LastStep, 200)
	}
	return msg
}

// OfTool is the text of a tool result: its text contents, joined.
func OfTool(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// FirstLine is the first line of s, trimmed.
func FirstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// Limited says when a limit resets, for a person; "" for none.
func Limited(until time.Time, kind string) string {
	if until.IsZero() {
		return ""
	}
	return turn.Limit{Until: until, Kind: kind}.Describe(time.Now())
}

// RFC3339 is t in UTC for a structured field; "" for the zero time.
func RFC3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// limitLines is what a result's text says of the usage limit, beyond its
// error text: the limit an interrupted query was waiting for, the warning.
func limitLines(b *strings.Builder, r *turn.Result) {
	if r.Interrupted && !r.LimitedUntil.IsZero() {
		fmt.Fprintf(b, "The usage limit had stopped it: %s.\n\n", Limited(r.LimitedUntil, r.LimitKind))
	}
	if r.LimitNote != "" {
		fmt.Fprintf(b, "Note: %s.\n\n", r.LimitNote)
	}
}

// Parked is what a running query's text and task status say while it
// waits for a usage limit's reset; "" while it does not.
func Parked(p sessions.Progress) string {
	if p.LimitedUntil.IsZero() {
		return ""
	}
	return fmt.Sprintf("Waiting for the usage limit to reset: %s; the query goes on by itself then (claude_chat_interrupt stops it).",
		Limited(p.LimitedUntil, p.LimitKind))
}

// SessionLimit is what the list says of a session's usage limit.
func SessionLimit(i sessions.Info) string {
	var parts []string
	if t := Limited(i.LimitedUntil, i.LimitKind); t != "" {
		parts = append(parts, t)
	}
	if i.LimitNote != "" {
		parts = append(parts, "note: "+i.LimitNote)
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}

// Tool is a tool result of the text s.
func Tool(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// Model names a model for a person: "" is the CLI's default.
func Model(s string) string {
	if s == "" {
		return "the CLI's default model"
	}
	return s
}
