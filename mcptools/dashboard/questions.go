package dashboard

import (
	"net/url"
	"strconv"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// The model's clarifying questions (AskUserQuestion) on a page: a card
// with each question's choices as radio buttons (one) or checkboxes
// (several) and a field for an answer in the person's own words,
// answered by the session's owner like a permission question (the first
// answer wins). Field names match the client's form (mcptools'
// questions.go): "qN" for the choices of question N, "qN_other" for the
// text.

// modelQuestions returns the model's questions pr asks, nil for another
// tool.
func modelQuestions(pr *turn.PermissionRequest) []claudeagent.Question {
	qs, _ := claudeagent.Questions(pr.ToolName, pr.Input)
	return qs
}

// questionField is the form field of question i (from 0).
func questionField(i int) string { return "q" + strconv.Itoa(i+1) }

// answers is the CLI's answer to pr's questions from a posted form; an
// answer that does not fit (a choice not offered) is an error.
func answers(pr *turn.PermissionRequest, form url.Values) (*claudeagent.PermissionResult, error) {
	qs := modelQuestions(pr)
	replies := make([]claudeagent.Reply, len(qs))
	for i := range qs {
		name := questionField(i)
		var picks []string
		for _, v := range form[name] {
			if v != "" {
				picks = append(picks, v)
			}
		}
		replies[i] = claudeagent.Reply{Picks: picks, Other: form.Get(name + "_other")}
	}
	return claudeagent.AnswerQuestions(pr.Input, qs, replies)
}

// questionsCard writes the card of the model's questions q, with the form
// that answers them when the page's user may.
func (p sessionPage) questionsCard(w *htmlWriter, q shownQuestion) {
	w.el("div", attrs{at("class", "question asks"), at("data-question", q.ID)}, func() {
		w.elText("h2", nil, "Claude Code asks")
		if !p.CanAnswer {
			w.elText("pre", nil, q.Message)
			w.elMarkup("p", attrs{at("class", "dim")}, "Only the session's owner answers it.")
			return
		}
		p.actionForm(w, "answer", func() {
			w.void("input", attrs{at("type", "hidden"), at("name", "question"), at("value", q.ID)})
			for i, aq := range q.Asked {
				askedField(w, i, aq)
			}
			w.elMarkup("button", attrs{at("name", "decision"), at("value", DecisionAnswer), at("class", "allow-once")}, "Answer")
			w.elMarkup("button", attrs{at("name", "decision"), at("value", DecisionDeny), at("class", "deny")}, "Decline to answer")
		})
	})
}

// askedField writes question i: its text, its choices and the free-text
// field.
func askedField(w *htmlWriter, i int, q claudeagent.Question) {
	name := questionField(i)
	w.el("fieldset", attrs{at("data-field", name)}, func() {
		legend := q.Question
		if q.Header != "" {
			legend = q.Header + ": " + q.Question
		}
		w.elText("legend", nil, legend)
		kind := "radio"
		if q.MultiSelect {
			kind = "checkbox"
		}
		for _, o := range q.Options {
			w.el("label", nil, func() {
				w.void("input", attrs{at("type", kind), at("name", name), at("value", o.Label)})
				w.text(" " + o.Label)
				if o.Description != "" {
					w.el("span", attrs{at("class", "dim")}, func() { w.text(" — " + o.Description) })
				}
			})
		}
		placeholder := "or answer in your own words"
		if len(q.Options) == 0 {
			placeholder = "your answer"
		}
		w.void("input", attrs{at("name", name+"_other"), at("placeholder", placeholder), atInt("maxlength", 2000)})
	})
}
