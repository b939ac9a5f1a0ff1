package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/dashboard"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/resulttext"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// Answers offered in a permission question, by the client's form and a
// dashboard page alike (dashboard.Decision*, the one home of the names).
const (
	decisionAllowOnce    = dashboard.DecisionAllowOnce
	decisionAllowSession = dashboard.DecisionAllowSession
	decisionDeny         = dashboard.DecisionDeny
)

// permissionSchema is the form of a permission question: flat primitives
// only, as elicitation requires.
var permissionSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "decision": {
      "type": "string",
      "title": "Decision",
      "enum": ["allow_once", "allow_session", "deny"],
      "enumNames": ["Allow once", "Allow for the rest of this session", "Deny"],
      "default": "deny"
    },
    "reason": {
      "type": "string",
      "title": "Reason (optional)",
      "description": "Told to Claude when you deny."
    }
  },
  "required": ["decision"]
}`)

// asker returns the function that forwards a permission question to the
// calling client as elicitation/create, or nil when the client cannot be
// asked (the manager's policy then applies).
func (h *handlers) asker(req *mcp.CallToolRequest) func(context.Context, *turn.PermissionRequest) (*claudeagent.PermissionResult, error) {
	if req == nil || req.Session == nil {
		return nil
	}
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return nil
	}
	ss := req.Session
	return func(ctx context.Context, pr *turn.PermissionRequest) (*claudeagent.PermissionResult, error) {
		res, err := ss.Elicit(ctx, formOf(pr))
		if err != nil {
			return nil, fmt.Errorf("asking the client: %w", err)
		}
		return permissionAnswer(pr, res)
	}
}

// formOf is the elicitation that asks pr: the model's questions as
// questions, any other tool call as a permission.
func formOf(pr *turn.PermissionRequest) *mcp.ElicitParams {
	if qs, ok := questionsOf(pr); ok {
		return questionParams(pr, qs)
	}
	return &mcp.ElicitParams{Mode: "form", Message: resulttext.Permission(pr), RequestedSchema: permissionSchema}
}

// permissionAnswer maps the client's answer to the form of formOf(pr) to
// the CLI's.
func permissionAnswer(pr *turn.PermissionRequest, res *mcp.ElicitResult) (*claudeagent.PermissionResult, error) {
	if qs, ok := questionsOf(pr); ok {
		return questionAnswer(pr, qs, res)
	}
	if res == nil {
		return nil, errors.New("the client returned no answer")
	}
	switch res.Action {
	case "accept":
	case "decline":
		return claudeagent.Deny(fmt.Sprintf("The user declined permission to use %s. Do not retry it; continue without it or ask for guidance.", pr.ToolName)), nil
	default: // cancel or anything unknown
		return claudeagent.Deny(fmt.Sprintf("The user dismissed the permission question for %s without allowing it.", pr.ToolName)), nil
	}
	decision, _ := res.Content["decision"].(string)
	reason, _ := res.Content["reason"].(string)
	switch decision {
	case decisionAllowOnce:
		return claudeagent.Allow(pr.Input), nil
	case decisionAllowSession:
		return claudeagent.Allow(pr.Input, sessionRules(pr.PermissionSuggestions)...), nil
	default:
		msg := fmt.Sprintf("The user denied permission to use %s.", pr.ToolName)
		if reason = strings.TrimSpace(reason); reason != "" {
			msg += " Reason: " + reason
		}
		return claudeagent.Deny(msg), nil
	}
}

// pageAnswer maps an answer given on a dashboard page to the CLI's, as
// the same answer to the elicitation form would be (dashboard.Server.Answer);
// a page denies the model's questions as declined (the page answers them
// itself: dashboard.answerQuestions).
func pageAnswer(pr *turn.PermissionRequest, decision, reason string) (*claudeagent.PermissionResult, error) {
	if _, ok := questionsOf(pr); ok && decision == decisionDeny {
		return questionAnswer(pr, nil, &mcp.ElicitResult{Action: "decline"})
	}
	return permissionAnswer(pr, &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision, "reason": reason}})
}

// sessionRules turns the CLI's permission suggestions into updates that
// last for this session only.
func sessionRules(suggestions []claudeagent.PermissionUpdate) []claudeagent.PermissionUpdate {
	var out []claudeagent.PermissionUpdate
	for _, s := range suggestions {
		if s.Type == "setMode" {
			continue // allowing one tool must not change the whole mode
		}
		var m map[string]any
		if json.Unmarshal(s.Raw, &m) != nil {
			continue
		}
		m["destination"] = "session"
		raw, err := json.Marshal(m)
		if err != nil {
			continue
		}
		out = append(out, claudeagent.PermissionUpdate{Type: s.Type, Destination: "session", Raw: raw})
	}
	return out
}
