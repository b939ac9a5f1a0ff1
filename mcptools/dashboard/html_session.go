package dashboard

import (
	"strconv"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
)

// A session's page and its panel (html.go has the writer, html_list.go
// the parts of a row).

// write is a session's page: its panel, its live turn (with the text being
// written), the form that sends a prompt or steers, its history.
func (p sessionPage) write(w *htmlWriter) {
	p.page(w, func() {
		w.el("p", attrs{at("class", "back")}, func() {
			w.elMarkup("a", attrs{at("href", w.link("/"))}, "← all sessions")
		})
		w.el("div", attrs{at("id", "panel"), at("data-session", p.Row.ID)}, func() { p.writePanel(w) })
		w.el("section", attrs{at("class", "live")}, func() {
			w.el("h2", nil, func() {
				w.m("Latest turn ")
				// Said at once by a page opened mid-turn; the script
				// follows the turn from there ("running", "ended").
				w.el("small", attrs{at("id", "live-status")}, func() {
					if p.Row.Running {
						w.m("running")
					}
				})
			})
			w.el("div", attrs{at("id", "steps"), at("data-session", p.Row.ID)}, nil)
			// The text being written, marked live: the script shows it
			// while it grows and hides it when the whole text replaces
			// it or the turn ends.
			w.el("div", attrs{at("id", "writing"), at("class", "step step-partial"), flag("hidden")}, func() {
				w.el("div", attrs{at("class", "who")}, func() {
					w.elMarkup("span", attrs{at("class", "live")}, "live")
					w.m(" Claude is writing…")
				})
				w.el("pre", attrs{at("id", "partial")}, nil)
			})
		})
		if p.CanAnswer {
			p.compose(w)
		}
		w.el("section", attrs{at("id", "history"), at("class", "history")}, func() { p.writeHistory(w) })
	})
}

// compose writes the form that sends a prompt to the idle session or
// steers its running turn (the session's owner's: either acts as them).
func (p sessionPage) compose(w *htmlWriter) {
	w.el("form", attrs{at("id", "compose"), at("class", "compose"), at("method", "post"), at("action", w.sessionLink(p.Row.ID, "/prompt"))}, func() {
		w.csrfInput(p.CSRF)
		w.el("textarea", attrs{at("name", "message"), atInt("rows", 3), flag("required"),
			at("placeholder", "A prompt for the idle session, or a message into its running turn")}, nil)
		button := func(id, action string, label markup, on bool) {
			as := attrs{at("id", id), at("formaction", w.sessionLink(p.Row.ID, "/"+action))}
			if !on {
				as = append(as, flag("disabled"))
			}
			w.elMarkup("button", as, label)
		}
		button("send", "prompt", "Send as a prompt", !p.Row.Running)
		button("steer", "steer", "Steer the running turn", p.Row.Running)
		w.el("span", attrs{at("id", "compose-status"), at("class", "dim")}, nil)
	})
}

// writeHistory is the session's history (also the fragment
// /ui/s/<id>/history).
func (p sessionPage) writeHistory(w *htmlWriter) {
	w.el("h2", nil, func() {
		w.m("History ")
		w.elText("small", nil, p.entries())
	})
	w.el("nav", attrs{at("class", "pages")}, func() {
		p.pageLink(w, p.Older, "older")
		w.m(" ")
		p.pageLink(w, p.Newer, "newer")
	})
	n := p.Prompts
	for _, e := range p.History {
		if e.Kind == "prompt" {
			n++ // numbered from 1, as claude_session_rewind counts them
		}
		p.historyEntry(w, e, n)
	}
}

// entries says which entries of the history the page shows.
func (p sessionPage) entries() string {
	if p.Total == 0 {
		return "none yet"
	}
	return "entries " + strconv.Itoa(p.From+1) + "–" + strconv.Itoa(p.From+len(p.History)) + " of " + strconv.Itoa(p.Total)
}

// pageLink writes the link to the page of the history before cursor, if
// there is one (cursor ≥ 0).
func (p sessionPage) pageLink(w *htmlWriter, cursor int, label markup) {
	if cursor < 0 {
		return
	}
	w.elMarkup("a", attrs{at("href", w.sessionLink(p.Row.ID, "?before="+strconv.Itoa(cursor)))}, label)
}

// historyEntry writes an entry of the history: a prompt (the n-th, with
// its Rewind button where the page's user may), a tool call, or Claude's
// text.
func (p sessionPage) historyEntry(w *htmlWriter, e history.Entry, n int) {
	w.el("div", attrs{at("class", "entry entry-"+e.Kind)}, func() {
		switch e.Kind {
		case "prompt", "steer":
			w.el("div", attrs{at("class", "who")}, func() {
				if e.Kind == "steer" {
					w.m("steered into the turn")
				} else {
					w.text("prompt " + strconv.Itoa(n))
				}
				if !e.Time.IsZero() {
					w.text(" · " + e.Time.Local().Format(time.TimeOnly))
				}
				if e.Kind == "prompt" && p.CanRewind {
					p.rewindButton(w, n)
				}
			})
			w.elText("pre", nil, e.Text)
		case "tool":
			w.el("details", nil, func() {
				w.el("summary", nil, func() {
					w.text("tool " + e.Tool)
					if e.IsError {
						w.m(" ")
						w.elMarkup("span", attrs{at("class", "error")}, "(error)")
					}
				})
				w.elText("pre", attrs{at("class", "input")}, indentJSON(e.Input))
				if e.Result != "" {
					w.elText("pre", attrs{at("class", "output")}, e.Result)
				}
			})
		default:
			w.elMarkup("div", attrs{at("class", "who")}, "Claude")
			w.elText("pre", nil, e.Text)
		}
	})
}

// writePanel is a session's facts, actions and questions (also the
// fragment /ui/s/<id>/panel).
func (p sessionPage) writePanel(w *htmlWriter) {
	r := p.Row
	w.el("h1", nil, func() {
		if r.Name != "" {
			w.text(r.Name)
		} else {
			w.text("Session " + short(r.ID))
		}
		w.m(" ")
		w.state(r.State)
	})
	w.el("dl", attrs{at("class", "facts")}, func() { p.facts(w) })
	p.actions(w)
}

// facts writes the terms of the panel's list of facts.
func (p sessionPage) facts(w *htmlWriter) {
	r := p.Row
	fact := func(term markup, as attrs, desc func()) {
		w.elMarkup("dt", nil, term)
		w.el("dd", as, desc)
	}
	fact("id", attrs{at("class", "id")}, func() { w.text(r.ID) })
	fact("model", nil, func() {
		if r.Model == "" {
			w.m("the CLI's default")
			return
		}
		w.text(r.Model)
	})
	if wt := r.Worktree; wt != nil {
		fact("worktree", nil, func() {
			w.text(wt.Path + " (branch " + wt.Branch + ")")
			for _, f := range wt.ChangedFiles {
				w.file(f)
			}
		})
	} else {
		fact("cwd", nil, func() { w.text(r.Cwd) })
	}
	if p.Admin {
		fact("owner", nil, func() { w.text(ownerOf(r.Owner)) })
	}
	if r.Limited != "" || r.LimitNote != "" {
		fact("usage limit", nil, func() { w.limit(r) })
	}
	fact("cost", nil, func() {
		w.cost(r.Cost, r.Budget, " ")
		w.text(" · " + queries(r.Queries))
	})
	if r.Running {
		fact("running", nil, func() {
			w.running(r)
			if r.LastStep != "" {
				w.elText("div", attrs{at("class", "step")}, r.LastStep)
			}
		})
	}
}

// actions writes the panel's forms and questions.
func (p sessionPage) actions(w *htmlWriter) {
	w.el("div", attrs{at("class", "actions")}, func() {
		if p.Row.Running {
			p.actionForm(w, "interrupt", func() {
				w.elMarkup("button", attrs{at("id", "interrupt"), at("class", "warn")}, "Interrupt the turn")
			})
		}
		p.actionForm(w, "close", func() {
			w.elMarkup("button", attrs{at("id", "close"), at("class", "danger")}, "Close the session")
		})
	})
	if p.Row.Worktree != nil && !p.Row.Worktree.Removed {
		w.el("div", attrs{at("class", "actions")}, func() {
			w.elMarkup("a", attrs{at("id", "diff-link"), at("href", w.sessionLink(p.Row.ID, "/diff"))}, "Review the diff")
			if p.CanAnswer {
				landForms(w, p.Row.ID, p.CSRF)
			}
		})
	}
	for _, q := range p.Questions {
		p.question(w, q)
	}
}

// actionForm writes the form that posts action on the session: its page
// token, then body.
func (p sessionPage) actionForm(w *htmlWriter, action string, body func()) {
	w.el("form", attrs{at("method", "post"), at("action", w.sessionLink(p.Row.ID, "/"+action))}, func() {
		w.csrfInput(p.CSRF)
		body()
	})
}

// question writes a permission question, with the form that answers it
// when the page's user may.
func (p sessionPage) question(w *htmlWriter, q shownQuestion) {
	if len(q.Asked) > 0 {
		p.questionsCard(w, q)
		return
	}
	w.el("div", attrs{at("class", "question"), at("data-question", q.ID)}, func() {
		w.elText("h2", nil, "Permission asked: "+q.Tool)
		w.elText("pre", nil, q.Message)
		if !p.CanAnswer {
			w.elMarkup("p", attrs{at("class", "dim")}, "Only the session's owner answers it.")
			return
		}
		p.actionForm(w, "answer", func() {
			w.void("input", attrs{at("type", "hidden"), at("name", "question"), at("value", q.ID)})
			decision := func(value, class string, label markup) {
				w.elMarkup("button", attrs{at("name", "decision"), at("value", value), at("class", class)}, label)
			}
			decision(DecisionAllowOnce, "allow-once", "Allow once")
			decision(DecisionAllowSession, "allow-session", "Allow for this session")
			w.void("input", attrs{at("name", "reason"), at("placeholder", "reason, told to Claude when you deny"), atInt("maxlength", 2000)})
			decision(DecisionDeny, "deny", "Deny")
		})
	})
}
