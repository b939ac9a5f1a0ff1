package claudeagent

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The model's clarifying questions. Its AskUserQuestion tool reaches the
// host as a can_use_tool request in every permission mode (the tool
// requires user interaction, which the CLI checks before
// bypassPermissions); the CLI takes the answers as an allow whose
// updatedInput is the input plus "answers": question text -> the chosen
// label, several labels joined by ", " (both pinned CLIs, 2.1.197 and
// 2.1.330, describe and read them so). An allow without answers makes the
// CLI tell the model "The user did not answer the questions"; a deny's
// message reaches the model as the tool's error.

// AskUserQuestionTool is the name of the CLI's tool for the model's
// clarifying questions.
const AskUserQuestionTool = "AskUserQuestion"

// Question is one of the model's clarifying questions.
type Question struct {
	Question    string           `json:"question"`
	Header      string           `json:"header,omitempty"`
	Options     []QuestionOption `json:"options,omitempty"`
	MultiSelect bool             `json:"multiSelect,omitempty"`
}

// QuestionOption is one choice a question offers.
type QuestionOption struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// Questions returns the questions of an AskUserQuestion call's input; false
// when tool is another tool or the input holds no question.
func Questions(tool string, input json.RawMessage) ([]Question, bool) {
	if tool != AskUserQuestionTool {
		return nil, false
	}
	var in struct {
		Questions []Question `json:"questions"`
	}
	if json.Unmarshal(input, &in) != nil {
		return nil, false
	}
	in.Questions = slices.DeleteFunc(in.Questions, func(q Question) bool { return strings.TrimSpace(q.Question) == "" })
	return in.Questions, len(in.Questions) > 0
}

// Reply is a person's answer to one question: the labels picked (one at
// most for a single choice) and text of their own (the "other" answer, or
// a note beside the picks).
type Reply struct {
	Picks []string
	Other string
}

// AnswerQuestions is the allow that gives the CLI the answers to the
// questions of input, replies[i] answering qs[i]. A pick that is not one
// of its question's labels, or several picks for a single choice, is an
// error that says which; a question with neither picks nor text stays
// unanswered. Text beside picks goes as the question's note
// (annotations[question].notes), which the CLI shows the model.
func AnswerQuestions(input json.RawMessage, qs []Question, replies []Reply) (*PermissionResult, error) {
	var in map[string]json.RawMessage
	if err := json.Unmarshal(input, &in); err != nil || in == nil {
		return nil, fmt.Errorf("reading the questions' input: not a JSON object")
	}
	answers := map[string]string{}
	notes := map[string]map[string]string{}
	for i, q := range qs {
		var r Reply
		if i < len(replies) {
			r = replies[i]
		}
		if err := checkPicks(q, r.Picks); err != nil {
			return nil, err
		}
		other := strings.TrimSpace(r.Other)
		switch {
		case len(r.Picks) > 0:
			answers[q.Question] = strings.Join(r.Picks, ", ")
			if other != "" {
				notes[q.Question] = map[string]string{"notes": other}
			}
		case other != "":
			answers[q.Question] = other
		}
	}
	a, _ := json.Marshal(answers)
	in["answers"] = a
	if len(notes) > 0 {
		n, _ := json.Marshal(notes)
		in["annotations"] = n
	}
	out, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("writing the answers: %w", err)
	}
	return Allow(out), nil
}

// checkPicks says what is wrong with picks as an answer to q.
func checkPicks(q Question, picks []string) error {
	if !q.MultiSelect && len(picks) > 1 {
		return fmt.Errorf("question %q takes one choice, got %d", q.Question, len(picks))
	}
	for _, p := range picks {
		if !slices.ContainsFunc(q.Options, func(o QuestionOption) bool { return o.Label == p }) {
			labels := make([]string, len(q.Options))
			for i, o := range q.Options {
				labels[i] = fmt.Sprintf("%q", o.Label)
			}
			return fmt.Errorf("%q is not a choice of question %q: choose among %s, or write an answer of your own", p, q.Question, strings.Join(labels, ", "))
		}
	}
	return nil
}

// GivenAnswers returns the answers an allow of AskUserQuestion carries
// (question text -> answer), nil when it carries none.
func GivenAnswers(res *PermissionResult) map[string]string {
	if res == nil || res.Behavior != "allow" {
		return nil
	}
	var in struct {
		Answers     map[string]string `json:"answers"`
		Annotations map[string]struct {
			Notes string `json:"notes"`
		} `json:"annotations"`
	}
	if json.Unmarshal(res.UpdatedInput, &in) != nil || len(in.Answers) == 0 {
		return nil
	}
	for q, a := range in.Annotations {
		if a.Notes != "" && in.Answers[q] != "" {
			in.Answers[q] += " (" + a.Notes + ")"
		}
	}
	return in.Answers
}
