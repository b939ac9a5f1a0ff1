package dashboard

import (
	"bytes"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"strconv"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
)

// The dashboard's HTML, written by plain Go rather than html/template:
// text/template looks methods up by name (reflect), which makes the linker
// keep every exported method of every reachable type — megabytes of the
// binary, most of them paged in.
//
// Safe by construction all the same: markup is only what this file and
// html_session.go write as constants (the markup type takes no
// string variable without a conversion, and there is none); every value
// from data goes through htmlWriter.text (the HTML escape of < > & ' ", for
// text and quoted attribute values alike; mt is markup, then text), int
// (int64, mi), or sessionURL (a path segment escaped for the URL, then for
// the attribute). TestDashboardHTMLEscapes renders every page from hostile
// data.

// markup is HTML written as it is: untyped string constants of this file.
type markup string

// htmlWriter builds a page.
type htmlWriter struct {
	b    bytes.Buffer
	root string // the path the pages are under (Dashboard.root)
}

// m writes markup.
func (w *htmlWriter) m(s markup) { w.b.WriteString(string(s)) }

// text writes s escaped, for text and quoted attribute values.
func (w *htmlWriter) text(s string) { w.b.WriteString(html.EscapeString(s)) }

func (w *htmlWriter) int(n int) { w.b.WriteString(strconv.Itoa(n)) }

func (w *htmlWriter) int64(n int64) { w.b.WriteString(strconv.FormatInt(n, 10)) }

// mt writes markup, then s escaped.
func (w *htmlWriter) mt(m markup, s string) {
	w.m(m)
	w.text(s)
}

// mi writes markup, then n.
func (w *htmlWriter) mi(m markup, n int) {
	w.m(m)
	w.int(n)
}

// url writes the address of a path under the pages' root.
func (w *htmlWriter) url(path markup) {
	w.text(w.root)
	w.m(path)
}

// sessionURL writes the address of session id's page.
func (w *htmlWriter) sessionURL(id string) {
	w.url("/s/")
	w.text(url.PathEscape(id))
}

// csrfInput writes the hidden input carrying the page's token.
func (w *htmlWriter) csrfInput(token string) {
	w.mt(`<input type="hidden" name="csrf" value="`, token)
	w.m(`">`)
}

// render writes a page.
func (d *Dashboard) render(rw http.ResponseWriter, code int, page func(*htmlWriter)) {
	writePage(rw, code, page, d.root)
}

// renderPublic writes a page for a request without a sign-in: its links
// go to /ui, never to the stdio root.
func (d *Dashboard) renderPublic(rw http.ResponseWriter, code int, page func(*htmlWriter)) {
	writePage(rw, code, page, uiPrefix)
}

func writePage(rw http.ResponseWriter, code int, page func(*htmlWriter), root string) {
	w := htmlWriter{root: root}
	page(&w)
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	rw.WriteHeader(code)
	_, _ = rw.Write(w.b.Bytes())
}

// usd is an amount in dollars.
func usd(v float64) string { return "$" + strconv.FormatFloat(v, 'f', 4, 64) }

// short is the start of an id: its first 8 bytes, never half a character.
func short(id string) string { return textcut.Prefix(id, 8) }

// indentJSON is a tool's input as indented JSON (as it came when it is not
// JSON), cut at 4000 bytes.
func indentJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return textcut.Cut(b.String(), 4000)
}

// frac is a/b within [0, 1] (0 when b is not positive), for a meter.
func frac(a, b float64) string {
	f := 0.0
	if b > 0 {
		f = min(a/b, 1)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// queries writes "1 query" or "N queries".
func (w *htmlWriter) queries(n int) {
	w.int(n)
	if n == 1 {
		w.m(" query")
		return
	}
	w.m(" queries")
}

// head is the start of every page but the signed-in one.
func (p pageBase) head(w *htmlWriter) {
	w.mt(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="`, p.CSRF)
	w.mt(`">
<meta name="ui-root" content="`, w.root)
	w.mt(`">
<title>`, p.Title)
	w.m(` · claude-agent-mcp</title>
<link rel="stylesheet" href="`)
	w.url(`/static/app.css">
<script src="`)
	w.url(`/static/app.js" defer></script>
</head>
<body>
<header class="top">
  <a class="brand" href="`)
	w.url(`/">claude-agent-mcp</a>
  <span class="who">`)
	if p.HTTP {
		w.mt("signed in as <b>", p.User)
		w.m("</b>")
		if p.Admin {
			w.m(" (admin: every session)")
		}
	} else {
		w.m("this machine's sessions")
	}
	w.m("</span>\n  ")
	if p.HTTP && p.CSRF != "" {
		w.m(`<form class="signout" method="post" action="`)
		w.url(`/signout">`)
		w.csrfInput(p.CSRF)
		w.m(`<button>Sign out</button></form>`)
	}
	w.m("\n</header>\n<main>\n")
}

// foot is the end of every page but the signed-in one.
func foot(w *htmlWriter) { w.m("\n</main>\n</body>\n</html>\n") }

func (p errorPage) write(w *htmlWriter) {
	p.head(w)
	w.mt("\n<h1>", p.Title)
	w.mt("</h1>\n<p class=\"message\">", p.Message)
	w.m("</p>\n<p><a href=\"")
	w.url("/\">The sessions</a></p>\n")
	foot(w)
}

func (p signinPage) write(w *htmlWriter) {
	p.head(w)
	w.m(`
<h1>Sign in</h1>
<p>Sign in with the bearer token you use for the MCP endpoint; you will see your own sessions.</p>
`)
	if p.Failed {
		w.m(`<p class="message error">That token is not known to this server.</p>`)
	}
	if p.RetryAfter > 0 {
		w.mi(`<p class="message error">Too many failed sign-ins from your address: try again in `, p.RetryAfter)
		w.m(` s.</p>`)
	}
	w.m(`
<form method="post" action="`)
	w.url(`/signin" class="signin">
  <label>Token <input type="password" name="token" autocomplete="current-password" required autofocus></label>
  <button>Sign in</button>
</form>
`)
	foot(w)
}

// signedIn is the page the stdio link leaves the secret behind with.
func signedIn(w *htmlWriter) {
	w.m(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="0;url=`)
	w.url(`/">
<title>Signed in · claude-agent-mcp</title>
<link rel="stylesheet" href="`)
	w.url(`/static/app.css">
</head>
<body><main><p>Signed in. <a href="`)
	w.url(`/">Go to the sessions</a>.</p></main></body>
</html>
`)
}

// write is the list of sessions, with the spend charts.
func (p listPage) write(w *htmlWriter) {
	p.head(w)
	w.m("\n<h1>Sessions</h1>\n<div id=\"rows\" data-live=\"list\">")
	p.writeRows(w)
	w.m("</div>\n")
	if len(p.Charts) > 0 {
		w.m("<section class=\"charts\">\n")
		for _, c := range p.Charts {
			c.write(w)
		}
		w.m("\n</section>")
	}
	w.m("\n")
	foot(w)
}

func (c spendChart) write(w *htmlWriter) {
	w.mt("<figure class=\"chart\">\n  <figcaption>", c.Title)
	w.mt(" <small>cumulative, over the last ", c.Span)
	w.mt("; top ", c.Max)
	w.mi("</small></figcaption>\n  <svg viewBox=\"0 0 ", c.Width)
	w.mi(" ", c.Height)
	w.mi(`" width="`, c.Width)
	w.mi(`" height="`, c.Height)
	w.mt(`" role="img" aria-label="`, c.Title)
	w.mi("\">\n    <rect class=\"frame\" x=\"0\" y=\"0\" width=\"", c.Width)
	w.mi(`" height="`, c.Height)
	w.m("\"></rect>\n    ")
	for _, l := range c.Lines {
		w.mt(`<polyline fill="none" stroke="`, l.Color)
		w.mt(`" stroke-width="2" points="`, l.Points)
		w.m(`"></polyline>`)
	}
	w.m("\n  </svg>\n  <ul class=\"legend\">")
	for _, l := range c.Lines {
		w.mt(`<li><svg width="10" height="10"><rect width="10" height="10" fill="`, l.Color)
		w.mt(`"></rect></svg> `, l.Label)
		w.mt(" ", usd(l.Total))
		w.m("</li>")
	}
	w.m("</ul>\n</figure>")
}

// writeRows is the tables of sessions (also the fragment /ui/rows).
func (p listPage) writeRows(w *htmlWriter) {
	w.m(`
<table class="sessions">
<thead><tr><th>Session</th><th>State</th><th>Model</th><th>Where</th><th>Turn</th><th>Cost</th></tr></thead>
<tbody>
`)
	for _, r := range p.Rows {
		r.write(w, p.Admin)
	}
	if len(p.Rows) == 0 {
		w.m(`<tr><td colspan="6" class="dim">No open sessions.</td></tr>`)
	}
	w.m("\n</tbody>\n</table>\n")
	if len(p.Others) > 0 {
		w.m(`<h2>On other instances <small>(sharing the registry; read-only)</small></h2>
<table class="sessions others">
<thead><tr><th>Session</th><th>Model</th><th>Where</th><th>Last used</th><th>Cost</th></tr></thead>
<tbody>
`)
		for _, o := range p.Others {
			o.write(w, p.Admin)
		}
		w.m("\n</tbody>\n</table>")
	}
	w.m("\n")
}

// nameOrID writes a session's name, or the start of its id.
func (w *htmlWriter) nameOrID(name, id string) {
	if name != "" {
		w.text(name)
	} else {
		w.text(short(id))
	}
}

// owner writes a session's owner ("(stdio)": none).
func (w *htmlWriter) owner(owner string) {
	if owner == "" {
		w.m("(stdio)")
	} else {
		w.text(owner)
	}
}

// cost writes a session's cost, and its budget with a meter; space goes
// before the meter.
func (w *htmlWriter) cost(cost, budget float64, space markup) {
	w.text(usd(cost))
	if budget > 0 {
		w.mt(" of ", usd(budget))
		w.m(space + `<meter min="0" max="1" low="0.7" high="0.9" optimum="0" value="`)
		w.text(frac(cost, budget))
		w.m(`"></meter>`)
	}
}

// running writes a running turn's elapsed time and counts.
func (w *htmlWriter) running(r sessionRow) {
	w.m(`<span class="elapsed" data-since="`)
	w.int64(r.Since)
	w.mt(`">`, r.Elapsed)
	w.mi("</span> · ", r.Turns)
	w.mi(" API turn(s) · ", r.Tools)
	w.m(" tool call(s)")
}

// write is a session's row in the list.
func (r sessionRow) write(w *htmlWriter, admin bool) {
	w.mt(`<tr class="session" data-session="`, r.ID)
	w.m("\">\n  <td><a href=\"")
	w.sessionURL(r.ID)
	w.m(`">`)
	w.nameOrID(r.Name, r.ID)
	w.m("</a>")
	if r.Name != "" {
		w.mt(` <small class="id">`, short(r.ID))
		w.m("</small>")
	}
	if admin {
		w.m(`<div class="owner">`)
		w.owner(r.Owner)
		w.m("</div>")
	}
	w.m("</td>\n  <td>")
	w.state(r.State)
	if r.Questions != 0 {
		w.mi(` <span class="ask">`, r.Questions)
		w.m(" question(s)</span>")
	}
	if r.Task != "" {
		w.mt(`<div class="task">task `, short(r.Task))
		w.m("</div>")
	}
	w.limit(r)
	w.m("</td>\n  <td>")
	if r.Model != "" {
		w.text(r.Model)
	} else {
		w.m(`<span class="dim">default</span>`)
	}
	w.m("</td>\n  <td class=\"where\">")
	r.where(w)
	w.m("</td>\n  <td class=\"turn\">")
	if r.Running {
		w.running(r)
		w.mt(`<div class="step">`, r.LastStep)
		w.m("</div>")
	} else {
		w.m(`<span class="dim">`)
		w.queries(r.Queries)
		w.m("</span>")
	}
	w.m("</td>\n  <td class=\"cost\">")
	w.cost(r.Cost, r.Budget, "")
	w.m("</td>\n</tr>")
}

// limit writes what a row says of the usage limit: when it resets, the
// CLI's warning.
func (w *htmlWriter) limit(r sessionRow) {
	if r.Limited != "" {
		w.mt(`<div class="limited">`, r.Limited)
		w.m("</div>")
	}
	if r.LimitNote != "" {
		w.mt(`<div class="limit-note">`, r.LimitNote)
		w.m("</div>")
	}
}

// state writes a session's state.
func (w *htmlWriter) state(state string) {
	w.mt(`<span class="state state-`, state)
	w.mt(`">`, state)
	w.m("</span>")
}

// where is a row's worktree (its first five changed files) or cwd.
func (r sessionRow) where(w *htmlWriter) {
	wt := r.Worktree
	if wt == nil {
		w.text(r.Cwd)
		return
	}
	w.mt("<div>", wt.Path)
	w.mt(`</div><div class="dim">branch `, wt.Branch)
	w.mi(", ", len(wt.ChangedFiles))
	w.m(" changed</div>")
	for _, f := range wt.ChangedFiles[:min(len(wt.ChangedFiles), 5)] {
		w.file(f)
	}
}

// file writes a changed file of a worktree.
func (w *htmlWriter) file(f string) {
	w.mt(`<div class="file">`, f)
	w.m("</div>")
}

// write is a session of another instance in the list.
func (o otherRow) write(w *htmlWriter, admin bool) {
	w.m("<tr><td>")
	w.nameOrID(o.Name, o.ID)
	if admin {
		w.mt(`<div class="owner">`, o.Owner)
		w.m("</div>")
	}
	w.mt("</td><td>", o.Model)
	w.mt(`</td><td class="where">`, o.Cwd)
	w.mt("</td><td>", o.LastUsed)
	w.mi(" · ", o.Queries)
	w.mt(` queries</td><td class="cost">`, usd(o.Cost))
	w.m("</td></tr>")
}
