package mcptools

import (
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// A session's page and its panel (dashboard_html.go has the writer and the
// other pages).

// write is a session's page: its panel, its live turn, its history.
func (p sessionPage) write(w *htmlWriter) {
	p.head(w)
	w.m("\n<p class=\"back\"><a href=\"/ui/\">← all sessions</a></p>\n<div id=\"panel\" data-session=\"")
	w.text(p.Row.ID)
	w.m(`">`)
	p.writePanel(w)
	w.m("</div>\n<section class=\"live\">\n  <h2>Latest turn <small id=\"live-status\"></small></h2>\n  <div id=\"steps\" data-session=\"")
	w.text(p.Row.ID)
	w.m("\"></div>\n</section>\n<section class=\"history\">\n  <h2>History <small>")
	if p.Total != 0 {
		w.m("entries ")
		w.int(p.From + 1)
		w.m("–")
		w.int(p.From + len(p.History))
		w.m(" of ")
		w.int(p.Total)
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
	w.m("?before=")
	w.int(cursor)
	w.m(`">` + label + "</a>")
}

// historyEntry writes an entry of the history: a prompt, a tool call, or
// Claude's text.
func historyEntry(w *htmlWriter, e sessions.HistoryEntry) {
	w.m(`<div class="entry entry-`)
	w.text(e.Kind)
	w.m("\">\n    ")
	switch e.Kind {
	case "prompt":
		w.m(`<div class="who">prompt`)
		if !e.Time.IsZero() {
			w.m(" · ")
			w.text(e.Time.Local().Format(time.TimeOnly))
		}
		w.m("</div><pre>")
		w.text(e.Text)
		w.m("</pre>\n    ")
	case "tool":
		w.m("<details><summary>tool ")
		w.text(e.Tool)
		if e.IsError {
			w.m(` <span class="error">(error)</span>`)
		}
		w.m(`</summary><pre class="input">`)
		w.text(indentJSON(e.Input))
		w.m("</pre>")
		if e.Result != "" {
			w.m(`<pre class="output">`)
			w.text(e.Result)
			w.m("</pre>")
		}
		w.m("</details>\n    ")
	default:
		w.m(`<div class="who">Claude</div><pre>`)
		w.text(e.Text)
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
		w.m("Session ")
		w.text(short(r.ID))
	}
	w.m(" ")
	w.state(r.State)
	w.m("</h1>\n<dl class=\"facts\">\n  <dt>id</dt><dd class=\"id\">")
	w.text(r.ID)
	w.m("</dd>\n  <dt>model</dt><dd>")
	if r.Model != "" {
		w.text(r.Model)
	} else {
		w.m("the CLI's default")
	}
	w.m("</dd>\n  ")
	if wt := r.Worktree; wt != nil {
		w.m("<dt>worktree</dt><dd>")
		w.text(wt.Path)
		w.m(" (branch ")
		w.text(wt.Branch)
		w.m(")")
		for _, f := range wt.ChangedFiles {
			w.file(f)
		}
		w.m("</dd>")
	} else {
		w.m("<dt>cwd</dt><dd>")
		w.text(r.Cwd)
		w.m("</dd>")
	}
	w.m("\n  ")
	if p.Admin {
		w.m("<dt>owner</dt><dd>")
		if r.Owner == "" {
			w.m("(stdio)")
		} else {
			w.text(r.Owner)
		}
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
			w.m(`<div class="step">`)
			w.text(r.LastStep)
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
	w.m(`<div class="question" data-question="`)
	w.text(q.ID)
	w.m("\">\n  <h2>Permission asked: ")
	w.text(q.Tool)
	w.m("</h2>\n  <pre>")
	w.text(q.Message)
	w.m("</pre>\n  ")
	if !p.CanAnswer {
		w.m(`<p class="dim">Only the session's owner answers it.</p>`)
		w.m("\n</div>")
		return
	}
	p.actionForm(w, "answer")
	w.m("\n    ")
	w.csrfInput(p.CSRF)
	w.m(`<input type="hidden" name="question" value="`)
	w.text(q.ID)
	w.m(`">
    <button name="decision" value="` + decisionAllowOnce + `" class="allow-once">Allow once</button>
    <button name="decision" value="` + decisionAllowSession + `" class="allow-session">Allow for this session</button>
    <input name="reason" placeholder="reason, told to Claude when you deny" maxlength="2000">
    <button name="decision" value="` + decisionDeny + `" class="deny">Deny</button>
  </form>`)
	w.m("\n</div>")
}
