package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
)

// A worktree session's review and land: its diff as a page
// (/ui/s/<id>/diff), and the Land and Discard forms on its panel, for its
// owner (a land acts as them: the session may be asked for the commit
// message). The action is "land" with how and message, as the tool
// claude_session_land takes them.

// maxShownPatch bounds the patch a diff page shows; the resource pages
// through the rest.
const maxShownPatch = 1 << 20

// landTimeout bounds a land from the page (a commit message the session
// writes is a turn).
const landTimeout = 5 * time.Minute

// diffPage is a worktree session's diff.
type diffPage struct {
	pageBase
	Row     sessionRow
	Diff    *worktree.Diff
	Failure string // why there is no diff
	CanLand bool
}

// serveDiff serves the diff page of a session the user may see.
func (d *Dashboard) serveDiff(w http.ResponseWriter, r *http.Request, si *signin, id string) {
	s := d.session(si, id)
	if s == nil {
		d.render(w, http.StatusNotFound, errorPage{pageBase: d.base(si, "Not found"), Message: fmt.Sprintf("No open session %q of yours.", id)}.write)
		return
	}
	page := diffPage{pageBase: d.base(si, "Diff of "+id), Row: d.row(r.Context(), s, false)}
	page.CanLand = page.Row.Owner == si.user
	diff, err := s.Diff(r.Context())
	switch {
	case errors.Is(err, sessions.ErrNoWorktree):
		d.render(w, http.StatusNotFound, errorPage{pageBase: page.pageBase, Message: "This session has no worktree, so no diff."}.write)
		return
	case err != nil:
		page.Failure = err.Error()
	}
	page.Diff = diff
	d.render(w, http.StatusOK, page.write)
}

// write is the diff page: the summary of files, the patch with its lines
// marked, the land forms.
func (p diffPage) write(w *htmlWriter) {
	p.page(w, func() {
		w.el("p", attrs{at("class", "back")}, func() {
			w.elMarkup("a", attrs{at("href", w.sessionLink(p.Row.ID, ""))}, "← the session")
		})
		w.elText("h1", nil, "Diff of "+label(p.Row))
		if p.Failure != "" {
			w.elText("p", attrs{at("class", "error")}, "The diff could not be read: "+p.Failure)
			return
		}
		d := p.Diff
		w.elText("p", attrs{at("class", "dim")}, fmt.Sprintf("Branch %s against %s, the commit it branched from; uncommitted and untracked files included. %d file(s) changed.",
			d.Branch, short(d.Base), len(d.Files)))
		if p.CanLand {
			landForms(w, p.Row.ID, p.CSRF)
		}
		w.el("table", attrs{at("class", "diff-files")}, func() {
			for _, f := range d.Files {
				w.el("tr", nil, func() {
					w.elText("td", attrs{at("class", "file")}, f.Path)
					if f.Binary {
						w.elMarkup("td", attrs{at("colspan", "2")}, "binary")
						return
					}
					w.elText("td", attrs{at("class", "add")}, "+"+strconv.Itoa(f.Added))
					w.elText("td", attrs{at("class", "del")}, "−"+strconv.Itoa(f.Removed))
				})
			}
		})
		patch, cut := d.Patch, d.Cut
		if len(patch) > maxShownPatch {
			patch, cut = patch[:strings.LastIndexByte(patch[:maxShownPatch], '\n')+1], true
		}
		w.el("pre", attrs{at("id", "diff"), at("class", "diff")}, func() {
			for _, line := range strings.Split(strings.TrimSuffix(patch, "\n"), "\n") {
				w.elText("span", attrs{at("class", diffClass(line))}, line)
			}
		})
		if cut {
			w.elText("p", attrs{at("class", "dim")}, "The patch is cut here; read the rest through the resource claude-agent-mcp://sessions/"+p.Row.ID+"/diff.")
		}
	})
}

// diffClass is the class of a patch's line.
func diffClass(line string) string {
	switch {
	case strings.HasPrefix(line, "diff --git "):
		return "d-file"
	case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
		return "d-meta"
	case strings.HasPrefix(line, "@@"):
		return "d-hunk"
	case strings.HasPrefix(line, "+"):
		return "d-add"
	case strings.HasPrefix(line, "-"):
		return "d-del"
	}
	return "d-ctx"
}

// label names a row: its name, else its short id.
func label(r sessionRow) string {
	if r.Name != "" {
		return r.Name
	}
	return "session " + short(r.ID)
}

// landForms writes the Land form (how, an optional message) and the
// Discard form of a worktree session.
func landForms(w *htmlWriter, id, csrf string) {
	w.el("form", attrs{at("id", "land"), at("class", "land"), at("method", "post"), at("action", w.sessionLink(id, "/land"))}, func() {
		w.csrfInput(csrf)
		w.el("select", attrs{at("name", "how"), at("aria-label", "how to land")}, func() {
			for _, how := range worktree.Hows {
				if how != worktree.Discard {
					w.elText("option", attrs{at("value", how)}, how)
				}
			}
		})
		w.void("input", attrs{at("name", "message"), atInt("maxlength", 2000), at("placeholder", "commit message (empty: the session writes it)")})
		w.elMarkup("button", attrs{at("id", "land-button")}, "Land")
	})
	w.el("form", attrs{at("method", "post"), at("action", w.sessionLink(id, "/land"))}, func() {
		w.csrfInput(csrf)
		w.void("input", attrs{at("type", "hidden"), at("name", "how"), at("value", worktree.Discard)})
		w.elMarkup("button", attrs{at("id", "discard"), at("class", "danger")}, "Discard the work")
	})
}

// land carries out the land action: the session's worktree landed (or
// discarded) as the form says; the session is closed then.
func (d *Dashboard) land(r *http.Request, s *sessions.Session) (string, int) {
	how, message := r.PostFormValue("how"), strings.TrimSpace(r.PostFormValue("message"))
	if !slices.Contains(worktree.Hows, how) {
		return fmt.Sprintf("invalid how %q: use one of %s", how, strings.Join(worktree.Hows, ", ")), http.StatusBadRequest
	}
	ctx, cancel := context.WithTimeout(r.Context(), landTimeout)
	defer cancel()
	l, err := d.mgr.Land(ctx, s, how, message)
	if l == nil {
		return err.Error(), http.StatusConflict
	}
	msg := fmt.Sprintf("Landed %d commit(s) in %s by %s.", len(l.Commits), l.Target, how)
	switch how {
	case worktree.Discard:
		msg = "Discarded the worktree's work."
	case worktree.PullRequest:
		msg = "Opened a pull request into " + l.Target + ": " + l.PR + "."
	}
	if l.Removed {
		msg += " The worktree and its branch were removed and the session is closed."
	}
	if err != nil {
		msg += " But: " + err.Error()
	}
	return msg, http.StatusOK
}
