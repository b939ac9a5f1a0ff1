package sessions

import (
	"fmt"
	"strings"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// The model's clarifying questions (AskUserQuestion) reach the caller as
// permission questions do, asked as questions (mcptools); the CLI wants
// answers, never a bare allow, so a question nobody answers gets a refusal
// that tells the model how to go on: state its assumptions (the default)
// or, with --unanswered-questions=deny, that the questions cannot be
// answered. Neither advises another permission mode: none would help.

// Values of Config.UnansweredQuestions.
const (
	UnansweredAssume = "assume"
	UnansweredDeny   = "deny"
)

// isQuestion reports whether req is the model asking its clarifying
// questions.
func isQuestion(req *turn.PermissionRequest) bool {
	_, ok := claudeagent.Questions(req.ToolName, req.Input)
	return ok
}

// unanswered is the refusal of questions nobody answered, why saying why.
func (p permissionPolicy) unanswered(why string) *claudeagent.PermissionResult {
	if p.Questions == UnansweredDeny {
		return claudeagent.Deny(fmt.Sprintf("Your questions cannot be answered: %s. Do not ask them again; "+
			"go on without the answers as far as you can, or stop and say what you need to know.", why))
	}
	return claudeagent.Deny(fmt.Sprintf("Nobody can answer your questions now: %s. Do not ask them again; "+
		"choose for each question the answer you think best, state these assumptions in your reply, and go on with the task.", why))
}

// recordQuestions puts into t what became of the questions qs of c: the
// answers res carries, or the refusal the model got.
func recordQuestions(t *turn.Turn, c *claudeagent.CanUseToolRequest, qs []claudeagent.Question, res *claudeagent.PermissionResult) {
	answers := claudeagent.GivenAnswers(res)
	var lines []string
	for _, q := range qs {
		a := turn.QuestionAsked{ToolUseID: c.ToolUseID, Question: q.Question, MultiSelect: q.MultiSelect}
		for _, o := range q.Options {
			a.Options = append(a.Options, o.Label)
		}
		switch {
		case answers[q.Question] != "":
			a.Answer = answers[q.Question]
			lines = append(lines, fmt.Sprintf("%q: %s", q.Question, a.Answer))
		case res.Behavior == "deny":
			a.Unanswered = res.Message
			lines = append(lines, fmt.Sprintf("%q: not answered", q.Question))
		default:
			a.Unanswered = "The answer left this question open."
			lines = append(lines, fmt.Sprintf("%q: not answered", q.Question))
		}
		t.AddQuestion(a)
	}
	text := "answered " + strings.Join(lines, "; ")
	if res.Behavior == "deny" {
		text = "questions not answered: " + res.Message
	}
	t.Emit(turn.Event{Kind: turn.EventPermission, Tool: c.ToolName, ToolID: c.ToolUseID, IsError: res.Behavior == "deny", Text: text})
}
