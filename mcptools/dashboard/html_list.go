package dashboard

import (
	"strconv"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/listing"
)

// The list of sessions: its tables, its spend charts, and the parts of a
// row the session's panel shows too (html.go has the writer).

// write is the list of sessions, with the spend charts.
func (p listPage) write(w *htmlWriter) {
	p.page(w, func() {
		w.elMarkup("h1", nil, "Sessions")
		p.filterForm(w)
		w.el("div", attrs{at("id", "rows"), at("data-live", "list")}, func() { p.writeRows(w) })
		p.startForm(w)
		if len(p.Charts) > 0 {
			w.el("section", attrs{at("class", "charts")}, func() {
				for _, c := range p.Charts {
					writeChart(w, c)
				}
			})
		}
	})
}

// permissionModes are the modes the start form offers (the CLI's, in its
// documented order); the gate refuses those the user may not use.
var permissionModes = claudeagent.PermissionModes

// startForm writes the form that starts a session of the signed-in user,
// with an optional first prompt.
func (p listPage) startForm(w *htmlWriter) {
	w.el("details", attrs{at("class", "start")}, func() {
		w.elMarkup("summary", nil, "Start a session")
		w.el("form", attrs{at("id", "start"), at("method", "post"), at("action", w.link("/new"))}, func() {
			w.csrfInput(p.CSRF)
			field := func(label markup, input func()) {
				w.el("label", nil, func() {
					w.m(label)
					w.m(" ")
					input()
				})
			}
			field("Working directory", func() {
				w.void("input", attrs{at("name", "cwd"), flag("required"), at("placeholder", "/absolute/path")})
			})
			field("Name", func() { w.void("input", attrs{at("name", "name"), atInt("maxlength", 200)}) })
			field("Model", func() { w.void("input", attrs{at("name", "model"), at("placeholder", "the CLI's default")}) })
			field("Permission mode", func() {
				w.el("select", attrs{at("name", "permissionMode")}, func() {
					w.elMarkup("option", attrs{at("value", "")}, "the server's default")
					for _, m := range permissionModes {
						w.elText("option", attrs{at("value", m)}, m)
					}
				})
			})
			field("First prompt", func() {
				w.el("textarea", attrs{at("name", "prompt"), atInt("rows", 3), at("placeholder", "optional")}, nil)
			})
			w.elMarkup("button", attrs{at("id", "start-session")}, "Start")
		})
	})
}

// writeChart writes a spend chart as inline SVG.
func writeChart(w *htmlWriter, c spendChart) {
	w.el("figure", attrs{at("class", "chart")}, func() {
		w.el("figcaption", nil, func() {
			w.text(c.Title + " ")
			w.elText("small", nil, "cumulative, over the last "+c.Span+"; top "+c.Max)
		})
		viewBox := "0 0 " + strconv.Itoa(c.Width) + " " + strconv.Itoa(c.Height)
		w.el("svg", attrs{at("viewBox", viewBox), atInt("width", c.Width), atInt("height", c.Height),
			at("role", "img"), at("aria-label", c.Title)}, func() {
			w.el("rect", attrs{at("class", "frame"), at("x", "0"), at("y", "0"), atInt("width", c.Width), atInt("height", c.Height)}, nil)
			for _, l := range c.Lines {
				w.el("polyline", attrs{at("fill", "none"), at("stroke", l.Color), at("stroke-width", "2"), at("points", l.Points)}, nil)
			}
		})
		w.el("ul", attrs{at("class", "legend")}, func() {
			for _, l := range c.Lines {
				w.el("li", nil, func() {
					w.el("svg", attrs{at("width", "10"), at("height", "10")}, func() {
						w.el("rect", attrs{at("width", "10"), at("height", "10"), at("fill", l.Color)}, nil)
					})
					w.text(" " + l.Label + " " + usd(l.Total))
				})
			}
		})
	})
}

// writeRows is the tables of sessions (also the fragment /ui/rows).
func (p listPage) writeRows(w *htmlWriter) {
	w.el("table", attrs{at("class", "sessions"), atInt("data-waiting", p.Waiting)}, func() {
		w.thead("Session", "State", "Model", "Where", "Turn", "Cost")
		w.el("tbody", nil, func() {
			for _, r := range p.Rows {
				r.write(w, p.Admin)
			}
			if len(p.Rows) == 0 {
				w.el("tr", nil, func() {
					w.elMarkup("td", attrs{at("colspan", "6"), at("class", "dim")}, "No open sessions.")
				})
			}
		})
	})
	p.writeStored(w)
}

// thead writes a table's head, one column per heading.
func (w *htmlWriter) thead(headings ...markup) {
	w.el("thead", nil, func() {
		w.el("tr", nil, func() {
			for _, h := range headings {
				w.elMarkup("th", nil, h)
			}
		})
	})
}

// filterForm writes the form that filters the stored sessions by state
// and name (their first page).
func (p listPage) filterForm(w *htmlWriter) {
	w.el("form", attrs{at("class", "filter"), at("method", "get"), at("action", w.link("/"))}, func() {
		w.elMarkup("span", nil, "Stored sessions:")
		w.el("label", nil, func() {
			w.m("state ")
			w.el("select", attrs{at("name", "state")}, func() {
				w.elMarkup("option", attrs{at("value", "")}, "any")
				for _, st := range listing.States {
					as := attrs{at("value", string(st))}
					if string(st) == p.Query.State {
						as = append(as, flag("selected"))
					}
					w.elText("option", as, string(st))
				}
			})
		})
		w.el("label", nil, func() {
			w.m("name contains ")
			w.void("input", attrs{at("name", "name"), at("value", p.Query.Name), atInt("maxlength", 200)})
		})
		w.elMarkup("button", nil, "Filter")
	})
}

// writeStored is the list's stored part: a page of the sessions this
// instance does not hold, and the links to the first and the next page.
func (p listPage) writeStored(w *htmlWriter) {
	if p.Error != "" {
		w.elText("p", attrs{at("class", "message error")}, p.Error)
		return
	}
	if len(p.Others) == 0 && p.Next == "" && p.Query == (listQuery{}) {
		return
	}
	w.el("h2", nil, func() {
		w.m("Stored sessions ")
		w.elMarkup("small", nil, "(dormant, or held by another instance; read-only)")
	})
	if len(p.Others) == 0 {
		w.elMarkup("p", attrs{at("class", "dim")}, "No stored session on this page.")
	} else {
		w.el("table", attrs{at("class", "sessions others")}, func() {
			w.thead("Session", "State", "Model", "Where", "Last used", "Cost")
			w.el("tbody", nil, func() {
				for _, o := range p.Others {
					o.write(w, p.Admin)
				}
			})
		})
	}
	w.el("nav", attrs{at("class", "pager")}, func() {
		if p.Query.Cursor != "" {
			w.elMarkup("a", attrs{at("class", "first"), at("href", p.Query.link(w, ""))}, "First page")
		}
		if p.Next != "" {
			w.elMarkup("a", attrs{at("class", "next"), at("rel", "next"), at("href", p.Query.link(w, p.Next))}, "Next page")
		}
	})
}

// write is a session's row in the list.
func (r sessionRow) write(w *htmlWriter, admin bool) {
	class := "session"
	if r.Questions > 0 {
		class += " waiting"
	}
	w.el("tr", attrs{at("class", class), at("data-session", r.ID)}, func() {
		w.el("td", nil, func() {
			w.elText("a", attrs{at("href", w.sessionLink(r.ID, ""))}, nameOrID(r.Name, r.ID))
			if r.Name != "" {
				w.m(" ")
				w.elText("small", attrs{at("class", "id")}, short(r.ID))
			}
			if admin {
				w.elText("div", attrs{at("class", "owner")}, ownerOf(r.Owner))
			}
		})
		w.el("td", nil, func() {
			w.state(r.State)
			if r.Questions != 0 {
				w.m(" ")
				w.elText("span", attrs{at("class", "ask")}, "waits for an answer: "+strconv.Itoa(r.Questions)+" question(s)")
			}
			if r.Task != "" {
				w.elText("div", attrs{at("class", "task")}, "task "+short(r.Task))
			}
			w.limit(r)
		})
		w.el("td", nil, func() {
			if r.Model == "" {
				w.elMarkup("span", attrs{at("class", "dim")}, "default")
				return
			}
			w.text(r.Model)
		})
		w.el("td", attrs{at("class", "where")}, func() { r.where(w) })
		w.el("td", attrs{at("class", "turn")}, func() {
			if !r.Running {
				w.elText("span", attrs{at("class", "dim")}, queries(r.Queries))
				return
			}
			w.running(r)
			w.elText("div", attrs{at("class", "step")}, r.LastStep)
		})
		w.el("td", attrs{at("class", "cost")}, func() { w.cost(r.Cost, r.Budget, "") })
	})
}

// nameOrID is a session's name, or the start of its id.
func nameOrID(name, id string) string {
	if name != "" {
		return name
	}
	return short(id)
}

// ownerOf is how a session's owner is shown ("(stdio)": none).
func ownerOf(owner string) string {
	if owner == "" {
		return "(stdio)"
	}
	return owner
}

// cost writes a session's cost, and its budget with a meter; space goes
// before the meter.
func (w *htmlWriter) cost(cost, budget float64, space markup) {
	w.text(usd(cost))
	if budget > 0 {
		w.text(" of " + usd(budget))
		w.m(space)
		w.el("meter", attrs{at("min", "0"), at("max", "1"), at("low", "0.7"), at("high", "0.9"), at("optimum", "0"),
			at("value", frac(cost, budget))}, nil)
	}
}

// running writes a running turn's elapsed time and counts.
func (w *htmlWriter) running(r sessionRow) {
	w.elText("span", attrs{at("class", "elapsed"), at("data-since", strconv.FormatInt(r.Since, 10))}, r.Elapsed)
	w.text(" · " + strconv.Itoa(r.Turns) + " API turn(s) · " + strconv.Itoa(r.Tools) + " tool call(s)")
}

// limit writes what a row says of the usage limit: when it resets, the
// CLI's warning.
func (w *htmlWriter) limit(r sessionRow) {
	if r.Limited != "" {
		w.elText("div", attrs{at("class", "limited")}, r.Limited)
	}
	if r.LimitNote != "" {
		w.elText("div", attrs{at("class", "limit-note")}, r.LimitNote)
	}
}

// state writes a session's state.
func (w *htmlWriter) state(state string) {
	w.elText("span", attrs{at("class", "state state-"+state)}, state)
}

// where is a row's worktree (its first five changed files) or cwd.
func (r sessionRow) where(w *htmlWriter) {
	wt := r.Worktree
	if wt == nil {
		w.text(r.Cwd)
		return
	}
	w.elText("div", nil, wt.Path)
	w.elText("div", attrs{at("class", "dim")}, "branch "+wt.Branch+", "+strconv.Itoa(len(wt.ChangedFiles))+" changed")
	for _, f := range wt.ChangedFiles[:min(len(wt.ChangedFiles), 5)] {
		w.file(f)
	}
}

// file writes a changed file of a worktree.
func (w *htmlWriter) file(f string) { w.elText("div", attrs{at("class", "file")}, f) }

// write is a session of another instance in the list.
func (o otherRow) write(w *htmlWriter, admin bool) {
	w.el("tr", attrs{at("data-session", o.ID)}, func() {
		w.el("td", nil, func() {
			w.text(nameOrID(o.Name, o.ID))
			if admin {
				w.elText("div", attrs{at("class", "owner")}, o.Owner)
			}
		})
		w.el("td", nil, func() { w.state(o.State) })
		w.elText("td", nil, o.Model)
		w.elText("td", attrs{at("class", "where")}, o.Cwd)
		w.elText("td", nil, o.LastUsed+" · "+strconv.Itoa(o.Queries)+" queries")
		w.elText("td", attrs{at("class", "cost")}, usd(o.Cost))
	})
}
