package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// Rewinding a session's files from its page (as claude_session_rewind):
// the history shows a Rewind button by each prompt, for the session's
// owner on a server with file checkpoints. It posts a dry run, whose page
// lists the files that would be restored and asks to confirm; the
// confirmation (confirm=1) rewinds and says what was restored.

// rewindPage is a dry run's page (Done unset: it asks to confirm) or a
// rewind's.
type rewindPage struct {
	pageBase
	Session string // its id
	Cwd     string
	Result  *sessions.RewindResult
	Done    bool
}

// serveRewind carries out the action "rewind" on s (its audit's "started"
// line written) and answers with its page, or the refusal.
func (d *Dashboard) serveRewind(w http.ResponseWriter, r *http.Request, si *signin, s *sessions.Session, start time.Time) {
	n, err := strconv.Atoi(r.PostFormValue("prompt"))
	if err != nil {
		d.finishAction(w, r, si, "rewind", s.ID, start, fmt.Sprintf("invalid prompt %q: a prompt's number, from 1", r.PostFormValue("prompt")), http.StatusBadRequest)
		return
	}
	confirm := r.PostFormValue("confirm") == "1"
	ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
	defer cancel()
	res, err := s.Rewind(ctx, n, !confirm)
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, sessions.ErrBusy) {
			err, code = fmt.Errorf("%w; interrupt the turn or wait for its end, then rewind", err), http.StatusConflict
		}
		d.finishAction(w, r, si, "rewind", s.ID, start, err.Error(), code)
		return
	}
	_ = d.audit(si.user, "rewind", s.ID, start, "ok", "")
	d.log.Info("dashboard action", "user", si.user, "action", "rewind", "session_id", s.ID, "outcome", "ok", "dry_run", !confirm)
	if confirm {
		d.poke(s.ID, s.Info().Owner)
	}
	page := rewindPage{pageBase: d.base(si, "Rewind"), Session: s.ID, Cwd: s.Info().Cwd, Result: res, Done: confirm}
	d.render(w, http.StatusOK, page.write)
}

// write is the page: the files, and the form that confirms a dry run.
func (p rewindPage) write(w *htmlWriter) {
	p.page(w, func() {
		w.el("p", attrs{at("class", "back")}, func() {
			w.elMarkup("a", attrs{at("href", w.sessionLink(p.Session, ""))}, "← the session")
		})
		n := strconv.Itoa(p.Result.Prompt)
		switch {
		case len(p.Result.Files) == 0:
			w.elText("h1", nil, "Nothing to rewind to before prompt "+n)
			w.elMarkup("p", attrs{at("class", "message")}, "No file changed since then.")
			return
		case p.Done:
			w.elText("h1", nil, "Rewound to before prompt "+n)
			w.elText("p", attrs{at("class", "message")}, p.summary("Restored"))
		default:
			w.elText("h1", nil, "Rewind to before prompt "+n+"?")
			w.elText("p", attrs{at("class", "message")}, p.summary("Rewinding restores")+" The conversation stays as it is.")
		}
		w.el("div", attrs{at("class", "files")}, func() {
			for _, f := range p.Result.Files {
				w.file(p.rel(f))
			}
		})
		if p.Done {
			return
		}
		w.el("form", attrs{at("method", "post"), at("action", w.sessionLink(p.Session, "/rewind")), at("class", "actions")}, func() {
			w.csrfInput(p.CSRF)
			w.void("input", attrs{at("type", "hidden"), at("name", "prompt"), at("value", n)})
			w.void("input", attrs{at("type", "hidden"), at("name", "confirm"), at("value", "1")})
			w.elMarkup("button", attrs{at("id", "rewind-confirm"), at("class", "danger")}, "Rewind these files")
			w.elMarkup("a", attrs{at("href", w.sessionLink(p.Session, ""))}, "Cancel")
		})
	})
}

// summary says how many files and lines, after verb.
func (p rewindPage) summary(verb string) string {
	r := p.Result
	return fmt.Sprintf("%s %d file(s) to their content before prompt %d (+%d −%d lines).", verb, len(r.Files), r.Prompt, r.Insertions, r.Deletions)
}

// rel is f relative to the session's directory when it is in it.
func (p rewindPage) rel(f string) string {
	if rel, err := filepath.Rel(p.Cwd, f); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return f
}

// rewindButton writes the form that asks for prompt n's dry run.
func (p sessionPage) rewindButton(w *htmlWriter, n int) {
	w.el("form", attrs{at("method", "post"), at("action", w.sessionLink(p.Row.ID, "/rewind")), at("class", "rewind")}, func() {
		w.csrfInput(p.CSRF)
		w.void("input", attrs{at("type", "hidden"), at("name", "prompt"), at("value", strconv.Itoa(n))})
		w.elMarkup("button", attrs{at("class", "rewind")}, "Rewind…") // a dry run first: its page confirms
	})
}
