package resulttext

import (
	"fmt"
	"strings"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// Questions says what the model's clarifying questions ask, for the person
// who answers them: each question with its choices and what they mean.
func Questions(pr *turn.PermissionRequest, qs []claudeagent.Question) string {
	var b strings.Builder
	if len(qs) == 1 {
		b.WriteString("Claude Code asks a question")
	} else {
		fmt.Fprintf(&b, "Claude Code asks %d questions", len(qs))
	}
	fmt.Fprintf(&b, " (session %s, working in %s):", pr.SessionID, pr.Cwd)
	for i, q := range qs {
		fmt.Fprintf(&b, "\n\n%d. %s", i+1, q.Question)
		switch {
		case len(q.Options) == 0:
			b.WriteString("\n   (answer in your own words)")
		case q.MultiSelect:
			b.WriteString("\n   (choose any, or answer in your own words)")
		default:
			b.WriteString("\n   (choose one, or answer in your own words)")
		}
		for _, o := range q.Options {
			fmt.Fprintf(&b, "\n   - %s", o.Label)
			if o.Description != "" {
				fmt.Fprintf(&b, ": %s", o.Description)
			}
		}
	}
	return b.String()
}

// questionLines adds to b what became of the questions the model asked in
// the turn, so the caller sees what its sub-agent went on with.
func questionLines(b *strings.Builder, r *turn.Result) {
	if len(r.Questions) == 0 {
		return
	}
	b.WriteString("Questions Claude Code asked:\n")
	for _, q := range r.Questions {
		if q.Answer != "" {
			fmt.Fprintf(b, "- %s Answered: %s\n", q.Question, q.Answer)
			continue
		}
		fmt.Fprintf(b, "- %s Not answered; Claude Code was told: %s\n", q.Question, textcut.Cut(q.Unanswered, 300))
	}
	b.WriteString("\n")
}
