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
// binary, most of them paged in. (gomponents, measured too, imports
// html/template and allocates a node per element: see BENCHMARKS.md.)
//
// A page is written element by element, nested as the page is:
//
//	w.el("tr", attrs{at("class", "session"), at("data-session", r.ID)}, func() {
//		w.elText("td", nil, r.Model)
//	})
//
// Safe by construction: tag names, attribute names and markup are of type
// markup, which only constants are converted to (TestNoMarkupFromData
// fails on any conversion of a value: there is no exception); every value
// from data is a string — an attribute's value or text — that the writer
// escapes (html.EscapeString: < > & ' ", for text and double-quoted
// values alike). TestDashboardHTMLEscapes renders every page from hostile
// data.

// markup is HTML written as it is: tag and attribute names, and text of
// this package's constants.
type markup string

// attr is an attribute of an element; a flag (a boolean attribute) is
// written without a value.
type attr struct {
	name  markup
	value string
	flag  bool
}

// attrs are an element's attributes, in the order written.
type attrs []attr

// at is the attribute name="value", value escaped.
func at(name markup, value string) attr { return attr{name: name, value: value} }

// atInt is the attribute name="n".
func atInt(name markup, n int) attr { return attr{name: name, value: strconv.Itoa(n)} }

// flag is a boolean attribute.
func flag(name markup) attr { return attr{name: name, flag: true} }

// htmlWriter builds a page.
type htmlWriter struct {
	b    bytes.Buffer
	root string // the path the pages are under (Dashboard.root)
}

// el writes the element tag with its attributes, body (nil: none) between
// its tags.
func (w *htmlWriter) el(tag markup, as attrs, body func()) {
	w.open(tag, as)
	if body != nil {
		body()
	}
	w.close(tag)
}

// elText writes the element tag with the text s.
func (w *htmlWriter) elText(tag markup, as attrs, s string) {
	w.open(tag, as)
	w.text(s)
	w.close(tag)
}

// elMarkup writes the element tag with the markup m (text of a constant).
func (w *htmlWriter) elMarkup(tag markup, as attrs, m markup) {
	w.open(tag, as)
	w.m(m)
	w.close(tag)
}

// void writes an element without content (meta, link, input).
func (w *htmlWriter) void(tag markup, as attrs) { w.open(tag, as) }

// open writes a start tag: on a line of its own for the elements that are
// blocks (the source stays readable; a line break before a block renders
// as nothing, and before the form controls as the space it was).
func (w *htmlWriter) open(tag markup, as attrs) {
	if onOwnLine(tag) {
		w.b.WriteByte('\n')
	}
	w.b.WriteByte('<')
	w.m(tag)
	for _, a := range as {
		w.b.WriteByte(' ')
		w.m(a.name)
		if !a.flag {
			w.b.WriteString(`="`)
			w.text(a.value)
			w.b.WriteByte('"')
		}
	}
	w.b.WriteByte('>')
}

func (w *htmlWriter) close(tag markup) {
	w.b.WriteString("</")
	w.m(tag)
	w.b.WriteByte('>')
}

func onOwnLine(tag markup) bool {
	switch tag {
	case "html", "head", "meta", "link", "title", "script", "body", "header", "main", "h1", "h2", "p", "div",
		"table", "thead", "tbody", "tr", "section", "figure", "figcaption", "ul", "dl", "dt", "nav", "form",
		"details", "pre", "button", "input", "label":
		return true
	}
	return false
}

// m writes markup.
func (w *htmlWriter) m(s markup) { w.b.WriteString(string(s)) }

// text writes s escaped, as text.
func (w *htmlWriter) text(s string) { w.b.WriteString(html.EscapeString(s)) }

// link is the address of a path under the pages' root.
func (w *htmlWriter) link(path string) string { return w.root + path }

// sessionLink is the address of session id's page, and of path under it.
func (w *htmlWriter) sessionLink(id, path string) string {
	return w.root + "/s/" + url.PathEscape(id) + path
}

// csrfInput writes the hidden input carrying the page's token.
func (w *htmlWriter) csrfInput(token string) {
	w.void("input", attrs{at("type", "hidden"), at("name", "csrf"), at("value", token)})
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
	w.b.WriteByte('\n')
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

// queries is "1 query" or "N queries".
func queries(n int) string {
	if n == 1 {
		return "1 query"
	}
	return strconv.Itoa(n) + " queries"
}

// page writes a whole page: the head, the top bar, then main in <main>.
func (p pageBase) page(w *htmlWriter, main func()) {
	w.m("<!doctype html>")
	w.el("html", attrs{at("lang", "en")}, func() {
		w.el("head", nil, func() {
			w.void("meta", attrs{at("charset", "utf-8")})
			w.void("meta", attrs{at("name", "viewport"), at("content", "width=device-width, initial-scale=1")})
			w.void("meta", attrs{at("name", "csrf-token"), at("content", p.CSRF)})
			w.void("meta", attrs{at("name", "ui-root"), at("content", w.root)})
			w.elText("title", nil, p.Title+" · claude-agent-mcp")
			w.void("link", attrs{at("rel", "stylesheet"), at("href", w.link("/static/app.css"))})
			w.el("script", attrs{at("src", w.link("/static/app.js")), flag("defer")}, nil)
		})
		w.el("body", nil, func() {
			p.topBar(w)
			w.el("main", nil, main)
		})
	})
}

// topBar is the header of every page: the name, who is signed in, the
// sign-out button.
func (p pageBase) topBar(w *htmlWriter) {
	w.el("header", attrs{at("class", "top")}, func() {
		w.elMarkup("a", attrs{at("class", "brand"), at("href", w.link("/"))}, "claude-agent-mcp")
		w.m(" ")
		w.el("span", attrs{at("class", "who")}, func() {
			if !p.HTTP {
				w.m("this machine's sessions")
				return
			}
			w.m("signed in as ")
			w.elText("b", nil, p.User)
			if p.Admin {
				w.m(" (admin: every session)")
			}
		})
		if p.HTTP && p.CSRF != "" {
			w.el("form", attrs{at("class", "signout"), at("method", "post"), at("action", w.link("/signout"))}, func() {
				w.csrfInput(p.CSRF)
				w.elMarkup("button", nil, "Sign out")
			})
		}
	})
}

func (p errorPage) write(w *htmlWriter) {
	p.page(w, func() {
		w.elText("h1", nil, p.Title)
		w.elText("p", attrs{at("class", "message")}, p.Message)
		w.el("p", nil, func() { w.elMarkup("a", attrs{at("href", w.link("/"))}, "The sessions") })
	})
}

func (p signinPage) write(w *htmlWriter) {
	p.page(w, func() {
		w.elMarkup("h1", nil, "Sign in")
		w.elMarkup("p", nil, "Sign in with the bearer token you use for the MCP endpoint; you will see your own sessions.")
		if p.Failed {
			w.elMarkup("p", attrs{at("class", "message error")}, "That token is not known to this server.")
		}
		if p.RetryAfter > 0 {
			w.elText("p", attrs{at("class", "message error")},
				"Too many failed sign-ins from your address: try again in "+strconv.Itoa(p.RetryAfter)+" s.")
		}
		w.el("form", attrs{at("method", "post"), at("action", w.link("/signin")), at("class", "signin")}, func() {
			w.el("label", nil, func() {
				w.m("Token ")
				w.void("input", attrs{at("type", "password"), at("name", "token"), at("autocomplete", "current-password"),
					flag("required"), flag("autofocus")})
			})
			w.elMarkup("button", nil, "Sign in")
		})
	})
}

// signedIn is the page the stdio link leaves the secret behind with.
func signedIn(w *htmlWriter) {
	w.m("<!doctype html>")
	w.el("html", attrs{at("lang", "en")}, func() {
		w.el("head", nil, func() {
			w.void("meta", attrs{at("charset", "utf-8")})
			w.void("meta", attrs{at("http-equiv", "refresh"), at("content", "0;url="+w.link("/"))})
			w.elMarkup("title", nil, "Signed in · claude-agent-mcp")
			w.void("link", attrs{at("rel", "stylesheet"), at("href", w.link("/static/app.css"))})
		})
		w.el("body", nil, func() {
			w.el("main", nil, func() {
				w.el("p", nil, func() {
					w.m("Signed in. ")
					w.elMarkup("a", attrs{at("href", w.link("/"))}, "Go to the sessions")
					w.m(".")
				})
			})
		})
	})
}
