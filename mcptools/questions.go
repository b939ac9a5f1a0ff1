package mcptools

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/resulttext"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// The model's clarifying questions (AskUserQuestion) come as permission
// questions and go out as questions: a form with, for question n, the
// field "qn" (one choice, or an array of choices when it takes several)
// and "qn_other" for an answer in the person's own words. The answer goes
// back to the CLI as it expects (claudeagent.AnswerQuestions); declining
// tells the model to go on without, never to change permission mode.

// questionsOf returns the model's questions pr asks, if it asks any.
func questionsOf(pr *turn.PermissionRequest) ([]claudeagent.Question, bool) {
	return claudeagent.Questions(pr.ToolName, pr.Input)
}

// questionField is the form field of question i (from 0); its free-text
// twin has otherSuffix.
func questionField(i int) string { return "q" + strconv.Itoa(i+1) }

const otherSuffix = "_other"

// questionSchema is the form that asks qs: flat fields, titled choices
// (oneOf for one, an array of anyOf for several), each with a free-text
// field beside.
func questionSchema(qs []claudeagent.Question) json.RawMessage {
	props := map[string]any{}
	for i, q := range qs {
		title := q.Header
		if title == "" {
			title = "Question " + strconv.Itoa(i+1)
		}
		name := questionField(i)
		var choices []map[string]any
		for _, o := range q.Options {
			if o.Label == "" {
				continue
			}
			t := o.Label
			if o.Description != "" {
				t += " — " + o.Description
			}
			choices = append(choices, map[string]any{"const": o.Label, "title": t})
		}
		switch {
		case len(choices) == 0:
		case q.MultiSelect:
			props[name] = map[string]any{"type": "array", "title": title, "description": q.Question + " (choose any)",
				"items": map[string]any{"anyOf": choices}}
		default:
			props[name] = map[string]any{"type": "string", "title": title, "description": q.Question, "oneOf": choices}
		}
		other := "Other answer (optional)"
		if len(choices) == 0 {
			other = title
		}
		props[name+otherSuffix] = map[string]any{"type": "string", "title": other,
			"description": q.Question + " — in your own words; beside a choice, a note on it."}
	}
	raw, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
	return raw
}

// questionParams is the elicitation that asks qs.
func questionParams(pr *turn.PermissionRequest, qs []claudeagent.Question) *mcp.ElicitParams {
	return &mcp.ElicitParams{Mode: "form", Message: resulttext.Questions(pr, qs), RequestedSchema: questionSchema(qs)}
}

// questionAnswer maps the client's answer to the form of questionSchema to
// the CLI's; a choice the form did not offer is an error.
func questionAnswer(pr *turn.PermissionRequest, qs []claudeagent.Question, res *mcp.ElicitResult) (*claudeagent.PermissionResult, error) {
	if res == nil {
		return nil, errors.New("the client returned no answer")
	}
	switch res.Action {
	case "accept":
	case "decline":
		return declinedQuestions("The user declined to answer your questions."), nil
	default:
		return declinedQuestions("The user dismissed your questions without answering."), nil
	}
	replies := make([]claudeagent.Reply, len(qs))
	for i := range qs {
		name := questionField(i)
		picks, err := picksOf(res.Content[name])
		if err != nil {
			return nil, fmt.Errorf("answer %s: %w", name, err)
		}
		other, _ := res.Content[name+otherSuffix].(string)
		replies[i] = claudeagent.Reply{Picks: picks, Other: other}
	}
	return claudeagent.AnswerQuestions(pr.Input, qs, replies)
}

// picksOf reads a form field's choice: a string, or an array of strings.
func picksOf(v any) ([]string, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		if v == "" {
			return nil, nil
		}
		return []string{v}, nil
	case []string:
		return v, nil
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("a choice must be a string, got %T", e)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("a choice must be a string or an array of strings, got %T", v)
}

// declinedQuestions is the CLI's answer when the person would not answer:
// why, and how the model goes on.
func declinedQuestions(why string) *claudeagent.PermissionResult {
	return claudeagent.Deny(why + " Do not ask them again; choose for each question the answer you think best, " +
		"state these assumptions in your reply, and go on with the task.")
}
