package mcptools

import (
	"fmt"
	"strings"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/run"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// The account's usage limit in the views of a query and a session (see
// sessions/limit.go): when it resets — RFC 3339 in the structured fields,
// "limited until … (in …, the 5-hour limit)" in the texts — and the CLI's
// warning that it is near, as a note.

// limitedText says when a limit resets, for a person; "" for none.
func limitedText(until time.Time, kind string) string {
	if until.IsZero() {
		return ""
	}
	return turn.Limit{Until: until, Kind: kind}.Describe(time.Now())
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// limitLines is what a result's text says of the usage limit, beyond its
// error text: the limit an interrupted query was waiting for, the warning.
func limitLines(b *strings.Builder, r *turn.Result) {
	if r.Interrupted && !r.LimitedUntil.IsZero() {
		fmt.Fprintf(b, "The usage limit had stopped it: %s.\n\n", limitedText(r.LimitedUntil, r.LimitKind))
	}
	if r.LimitNote != "" {
		fmt.Fprintf(b, "Note: %s.\n\n", r.LimitNote)
	}
}

// parkedLine is what a running query's text and task status say while it
// waits for a usage limit's reset; "" while it does not.
func parkedLine(p run.Progress) string {
	if p.LimitedUntil.IsZero() {
		return ""
	}
	return fmt.Sprintf("Waiting for the usage limit to reset: %s; the query goes on by itself then (claude_chat_interrupt stops it).",
		limitedText(p.LimitedUntil, p.LimitKind))
}

// sessionLimit is what the list says of a session's usage limit.
func sessionLimit(i sessions.Info) string {
	var parts []string
	if t := limitedText(i.LimitedUntil, i.LimitKind); t != "" {
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
