package dashboard

import (
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
)

// A session's page and its panel (html.go has the writer and the
// other pages).

// write is a session's page: its panel, its live turn, its history.
func (p sessionPage) write(w *htmlWriter) {
	p.head(w)
	w.m("\n<p class=\"back\"><a href=\"")
	w.url("/\">← all sessions</a></p>\n<div id=\"panel\" data-session=\"")
	w.text(p.Row.ID)
	w.m(`">`)
	p.writePanel(w)
	w.mt("</div>\n<section class=\"live\">\n  <h2>Latest turn <small id=\"live-status\"></small></h2>\n  <div id=\"steps\" data-session=\"", p.Row.ID)
	w.m("\"></div>\n</section>\n<section class=\"history\">\n  <h2>History <small>")
	if p.Total != 0 {
		w.mi("entries ", p.From+1)
		w.mi("–", p.From+len(p.History))
		w.mi(" of ", p.Total)
	} else {
		w.m("none yet")
	}
	w.m("</small></h2>\n  <nav class=\"pages\">")
	p.pageLink(w, p.Older, "older")
	w.m(" ")
	p.pageLink(w, p.Newer, "newer")
	w.m("</nav>\n  ")
	for _, e := range p.History {
		historyEntry(w, e)
	}
	w.m("\n</section>\n")
	foot(w)
}

// pageLink writes the link to the page of the history before cursor, if
// there is one (cursor ≥ 0).
func (p sessionPage) pageLink(w *htmlWriter, cursor int, label markup) {
	if cursor < 0 {
		return
	}
	w.m(`<a href="`)
	w.sessionURL(p.Row.ID)
	w.mi("?before=", cursor)
	w.m(`">` + label + "</a>")
}

// historyEntry writes an entry of the history: a prompt, a tool call, or
// Claude's text.
func historyEntry(w *htmlWriter, e history.Entry) {
	w.mt(`<div class="entry entry-`, e.Kind)
	w.m("\">\n    ")
	switch e.Kind {
	case "prompt":
		w.m(`<div class="who">prompt`)
		if !e.Time.IsZero() {
			w.mt(" · ", e.Time.Local().Format(time.TimeOnly))
		}
		w.mt("</div><pre>", e.Text)
		w.m("</pre>\n    ")
	case "tool":
		w.mt("<details><summary>tool ", e.Tool)
		if e.IsError {
			w.m(` <span class="error">(error)</span>`)
		}
		w.mt(`</summary><pre class="input">`, indentJSON(e.Input))
		w.m("</pre>")
		if e.Result != "" {
			w.mt(`<pre class="output">`, e.Result)
			w.m("</pre>")
		}
		w.m("</details>\n    ")
	default:
		w.mt(`<div class="who">Claude</div><pre>`, e.Text)
		w.m("</pre>")
	}
	w.m("\n  </div>")
}

// writePanel is a session's facts, actions and questions (also the
// fragment /ui/s/<id>/panel).
func (p sessionPage) writePanel(w *htmlWriter) {
	r := p.Row
	w.m("\n<h1>")
	if r.Name != "" {
		w.text(r.Name)
	} else {
		w.mt("Session ", short(r.ID))
	}
	w.m(" ")
	w.state(r.State)
	w.mt("</h1>\n<dl class=\"facts\">\n  <dt>id</dt><dd class=\"id\">", r.ID)
	w.m("</dd>\n  <dt>model</dt><dd>")
	if r.Model != "" {
		w.text(r.Model)
	} else {
		w.m("the CLI's default")
	}
	w.m("</dd>\n  ")
	if wt := r.Worktree; wt != nil {
		w.mt("<dt>worktree</dt><dd>", wt.Path)
		w.mt(" (branch ", wt.Branch)
		w.m(")")
		for _, f := range wt.ChangedFiles {
			w.file(f)
		}
		w.m("</dd>")
	} else {
		w.mt("<dt>cwd</dt><dd>", r.Cwd)
		w.m("</dd>")
	}
	w.m("\n  ")
	if p.Admin {
		w.m("<dt>owner</dt><dd>")
		w.owner(r.Owner)
		w.m("</dd>")
	}
	if r.Limited != "" || r.LimitNote != "" {
		w.m("\n  <dt>usage limit</dt><dd>")
		w.limit(r)
		w.m("</dd>")
	}
	w.m("\n  <dt>cost</dt><dd>")
	w.cost(r.Cost, r.Budget, " ")
	w.m(" · ")
	w.queries(r.Queries)
	w.m("</dd>\n  ")
	if r.Running {
		w.m("<dt>running</dt><dd>")
		w.running(r)
		if r.LastStep != "" {
			w.mt(`<div class="step">`, r.LastStep)
			w.m("</div>")
		}
		w.m("</dd>")
	}
	w.m("\n</dl>\n")
	p.actions(w)
}

// actions writes the panel's forms and questions.
func (p sessionPage) actions(w *htmlWriter) {
	w.m("<div class=\"actions\">\n  ")
	if p.Row.Running {
		p.actionForm(w, "interrupt")
		w.csrfInput(p.CSRF)
		w.m(`<button id="interrupt" class="warn">Interrupt the turn</button></form>`)
	}
	w.m("\n  ")
	p.actionForm(w, "close")
	w.csrfInput(p.CSRF)
	w.m("<button id=\"close\" class=\"danger\">Close the session</button></form>\n</div>\n")
	for _, q := range p.Questions {
		p.question(w, q)
	}
	w.m("\n")
}

// actionForm opens the form that posts an action on the session.
func (p sessionPage) actionForm(w *htmlWriter, action markup) {
	w.m(`<form method="post" action="`)
	w.sessionURL(p.Row.ID)
	w.m("/" + action + `">`)
}

// question writes a permission question, with the form that answers it
// when the page's user may.
func (p sessionPage) question(w *htmlWriter, q shownQuestion) {
	w.mt(`<div class="question" data-question="`, q.ID)
	w.mt("\">\n  <h2>Permission asked: ", q.Tool)
	w.mt("</h2>\n  <pre>", q.Message)
	w.m("</pre>\n  ")
	if !p.CanAnswer {
		w.m(`<p class="dim">Only the session's owner answers it.</p>`)
		w.m("\n</div>")
		return
	}
	p.actionForm(w, "answer")
	w.m("\n    ")
	w.csrfInput(p.CSRF)
	w.mt(`<input type="hidden" name="question" value="`, q.ID)
	w.m(`">
    <button name="decision" value="` + DecisionAllowOnce + `" class="allow-once">Allow once</button>
    <button name="decision" value="` + DecisionAllowSession + `" class="allow-session">Allow for this session</button>
    <input name="reason" placeholder="reason, told to Claude when you deny" maxlength="2000">
    <button name="decision" value="` + DecisionDeny + `" class="deny">Deny</button>
  </form>`)
	w.m("\n</div>")
}
