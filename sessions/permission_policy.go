// permissionPolicy answers a session's permission questions, the CLI's
// can_use_tool requests: the caller is asked when it can be, within the
// permission timeout, else the server's permission policy (allow or deny)
// answers, with a denial that says how to get the tool allowed (Decide);
// what became of the question goes into the running turn (recordPermission).
// The model's clarifying questions (AskUserQuestion) come the same way;
// nobody answering them is answered by the --unanswered-questions policy
// instead (questions.go).

package sessions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// askPermission asks the caller about a tool call.
type askPermission func(ctx context.Context, req *turn.PermissionRequest) (*claudeagent.PermissionResult, error)

// permissionPolicy answers the questions nobody else answered.
type permissionPolicy struct {
	Timeout time.Duration // how long the caller may take (--permission-timeout)
	Answer  string        // --permission-policy: "allow", else deny
	// Questions is --unanswered-questions: "deny", else assume.
	Questions string
	Log       *slog.Logger
}

// Decide asks the caller when it can (ask set), else applies the policy.
// It always returns an answer, within the timeout.
func (p permissionPolicy) Decide(ctx context.Context, req *turn.PermissionRequest, ask askPermission) *claudeagent.PermissionResult {
	why := "the caller cannot be asked (its MCP client did not declare elicitation)"
	if ask != nil {
		actx, cancel := context.WithTimeout(ctx, p.Timeout)
		res, err := ask(actx, req)
		cancel()
		switch {
		case err == nil && res != nil && isQuestion(req) && res.Behavior == "allow" && claudeagent.GivenAnswers(res) == nil:
			why = "the answer to them held none" // an allow without answers: the CLI would say they were not answered
		case err == nil && res != nil:
			if res.Behavior == "allow" && len(res.UpdatedInput) == 0 {
				// The CLI rejects an allow without updatedInput.
				res.UpdatedInput = claudeagent.Allow(req.Input).UpdatedInput
			}
			return res
		case errors.Is(err, context.DeadlineExceeded):
			why = fmt.Sprintf("the caller did not answer within %s", p.Timeout)
		case ctx.Err() != nil:
			why = "the request was cancelled"
		default:
			why = fmt.Sprintf("asking the caller failed (%v)", err)
		}
		p.Log.Info("permission question unanswered; applying policy", "tool", req.ToolName, "why", why, "policy", p.Answer)
	}
	if isQuestion(req) {
		return p.unanswered(why)
	}
	if p.Answer == "allow" {
		return claudeagent.Allow(req.Input)
	}
	return claudeagent.Deny(fmt.Sprintf(
		"Permission to use %s was denied: %s and the server's policy is to deny. "+
			"To allow it, the caller can switch the session's permission mode (e.g. to acceptEdits or bypassPermissions) "+
			"or create the session with allowedTools including %q.", req.ToolName, why, req.ToolName))
}

// recordPermission puts the answer res to c into t, the running turn (nil for
// none): a denial, and an event.
func recordPermission(t *turn.Turn, c *claudeagent.CanUseToolRequest, res *claudeagent.PermissionResult) {
	if t == nil {
		return
	}
	if qs, ok := claudeagent.Questions(c.ToolName, c.Input); ok {
		recordQuestions(t, c, qs, res)
		return
	}
	deny := res.Behavior == "deny"
	if deny {
		t.AddDenial(turn.PermissionDenial{ToolName: c.ToolName, ToolUseID: c.ToolUseID, ToolInput: c.Input})
	}
	text := fmt.Sprintf("allowed %s (%s)", c.ToolName, history.SummarizeInput(c.Input, 300))
	if deny {
		text = fmt.Sprintf("denied %s (%s): %s", c.ToolName, history.SummarizeInput(c.Input, 300), res.Message)
	}
	t.Emit(turn.Event{Kind: turn.EventPermission, Tool: c.ToolName, ToolID: c.ToolUseID, IsError: deny, Text: text})
}
