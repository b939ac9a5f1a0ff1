package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// The actions that give Claude something to do: start a session (the
// list's form, with an optional first prompt), send a prompt to an idle
// session, steer a running turn. They go through the sessions API as the
// tools do — Manager.Create (its options checked and gated: over HTTP as
// the signed-in user's, with their class limits), Session.StartRun (the
// process's start gated), Session.Steer — so a page can do nothing a tool
// call of the same user could not.

// promptWait is how long sending a prompt waits for its turn to start (a
// session queued for a live process starts later; the page follows it).
const promptWait = 5 * time.Second

// serveStart starts a session of si's user (POST /ui/new) and opens its
// page.
func (d *Dashboard) serveStart(w http.ResponseWriter, r *http.Request, si *signin) {
	start := time.Now()
	if err := d.audit(si.user, "start", "", start, "started", ""); err != nil {
		http.Error(w, "refused: "+err.Error()+"; nothing was done", http.StatusInternalServerError)
		return
	}
	id, msg, code := d.startSession(r, si)
	d.poke(id, si.user)
	d.finishAction(w, r, si, "start", id, start, msg, code)
}

// startSession creates the session the form describes and sends its first
// prompt, if any; it returns the new session's id ("" when none was made).
func (d *Dashboard) startSession(r *http.Request, si *signin) (id, msg string, code int) {
	o := sessions.CreateOptions{Cwd: strings.TrimSpace(r.PostFormValue("cwd")), Owner: si.user, Grant: si.grant}
	o.Name = strings.TrimSpace(r.PostFormValue("name"))
	o.Model = strings.TrimSpace(r.PostFormValue("model"))
	o.PermissionMode = r.PostFormValue("permissionMode")
	if o.Cwd == "" {
		return "", "Not started: give the session's working directory (an absolute path).", http.StatusBadRequest
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Minute)
	defer cancel()
	s, err := d.mgr.Create(ctx, o)
	if err != nil {
		return "", "Not started: " + err.Error(), errorStatus(err)
	}
	msg = "Started session " + s.ID + "."
	if prompt := r.PostFormValue("prompt"); strings.TrimSpace(prompt) != "" {
		pmsg, pcode := d.prompt(r, s, prompt)
		if pcode >= 400 {
			return s.ID, msg + " Its first prompt was not sent: " + pmsg, pcode
		}
		msg += " " + pmsg
	}
	return s.ID, msg, http.StatusOK
}

// prompt starts a query in the idle session s; its turn runs on after the
// request (the page follows it, its answer is in the history, and
// claude_chat_wait returns it).
func (d *Dashboard) prompt(r *http.Request, s *sessions.Session, prompt string) (string, int) {
	if err := sessions.ValidatePrompt(prompt); err != nil {
		return "Nothing sent: the message is empty.", http.StatusBadRequest
	}
	if _, err := d.launch(r.Context(), s, prompt); err != nil {
		if errors.Is(err, sessions.ErrBusy) {
			return "Not sent: " + err.Error() + ". A turn is running: steer it instead, or wait for it to end.", http.StatusConflict
		}
		return "Not sent: " + err.Error(), errorStatus(err)
	}
	return "Sent; the turn runs.", http.StatusOK
}

// launch starts a query in s for a page: its run watched by the
// dashboard's feed, its permission questions queued in the run for a page
// (or a claude_chat_wait, a view of the run like any) to answer.
func (d *Dashboard) launch(ctx context.Context, s *sessions.Session, prompt string) (*sessions.Run, error) {
	f := d.Watch(s)
	r, err := s.StartRun(ctx, prompt, sessions.QueryOptions{Watchers: []sessions.Listener{f}, QueueQuestions: true, ReturnAfter: promptWait})
	if err != nil {
		f.Abandon()
		return nil, err
	}
	f.Bind(r)
	return r, nil
}

// steer writes message into the running turn of s.
func (d *Dashboard) steer(r *http.Request, s *sessions.Session, message string) (string, int) {
	if err := sessions.ValidatePrompt(message); err != nil {
		return "Nothing sent: the message is empty.", http.StatusBadRequest
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	if err := s.Steer(ctx, message, nil); err != nil {
		if errors.Is(err, sessions.ErrNotRunning) {
			return fmt.Sprintf("Not steered: %v (on this page: Send as a prompt).", err), http.StatusConflict
		}
		return "Not steered: " + err.Error(), errorStatus(err)
	}
	return "Steered: Claude Code reads the message at its next step.", http.StatusOK
}

// errorStatus is the HTTP status of a refusal by the sessions API.
func errorStatus(err error) int {
	switch {
	case errors.Is(err, sessions.ErrRefused):
		return http.StatusForbidden
	case errors.Is(err, sessions.ErrNotFound), errors.Is(err, sessions.ErrClosed):
		return http.StatusNotFound
	case errors.Is(err, sessions.ErrBusy), errors.Is(err, sessions.ErrTooMany), errors.Is(err, sessions.ErrBudget):
		return http.StatusConflict
	case errors.Is(err, sessions.ErrShuttingDown):
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}
