package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// The dashboard's actions: start a session (a POST to /ui/new), and on a
// session (a POST to /ui/s/<id>/<action>) send a prompt to it when idle,
// steer its running turn, interrupt it, close it, answer a permission
// question or the model's clarifying questions (questions.go), rewind its
// files (rewind.go), land its worktree (land.go). Each must carry the
// sign-in cookie, a same-origin Origin header and the token of the page it
// came from; the action must be classified (actions); the session must be
// the user's (an admin may interrupt and close anyone's; a prompt, a
// steer, an answer, a rewind and a land act as the session's owner, so
// only they may); the options, the prompt's
// process, go through the sessions' gate as a tool call's do; and it is
// audited like a tool call, "started" first (an action whose line cannot
// be written is refused).

// actions are the dashboard's actions, classified like the MCP tools
// (mcptools' actions.go: these steer a caller's sessions): an action
// without a class is refused.
var actions = map[string]string{
	"start":     "run", // as claude_session_create (and a first prompt)
	"prompt":    "run", // as claude_chat_query
	"steer":     "run", // as claude_chat_steer
	"interrupt": "steer",
	"close":     "steer",
	"answer":    "steer",
	"rewind":    "run", // as claude_session_rewind
	"land":      "run", // as claude_session_land (a commit message may be a turn)
}

// ownerOnly are the actions that act as the session's owner.
var ownerOnly = map[string]bool{"prompt": true, "steer": true, "answer": true, "rewind": true, "land": true}

// The answers a page offers to a permission question: the decisions of
// the client's elicitation form (mcptools' permission.go), which
// Server.Answer maps to the CLI's answer.
const (
	DecisionAllowOnce    = "allow_once"
	DecisionAllowSession = "allow_session"
	DecisionDeny         = "deny"
	// DecisionAnswer answers the model's clarifying questions with the
	// form's fields (questions.go); deny declines them.
	DecisionAnswer = "answer"
)

// session returns the open session id of this instance that si may see
// (another instance's session is never taken up from here), or nil.
func (d *Dashboard) session(si *signin, id string) *sessions.Session {
	for _, s := range d.mgr.List() {
		if s.ID == id && d.visible(si, s.Info().Owner) {
			return s
		}
	}
	return nil
}

func (d *Dashboard) serveAction(w http.ResponseWriter, r *http.Request, si *signin, path string) {
	if !d.sameOrigin(r) {
		d.log.Warn("dashboard action refused: not from a page of this dashboard", "user", si.user, "path", path, "origin", r.Header.Get("Origin"))
		http.Error(w, "Forbidden: the request does not come from a page of this dashboard (Origin)", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if !d.checkPageToken(r, si) {
		d.log.Warn("dashboard action refused: no valid page token", "user", si.user, "path", path)
		http.Error(w, "Forbidden: the request carries no valid page token; reload the page", http.StatusForbidden)
		return
	}
	if path == "/new" {
		d.serveStart(w, r, si)
		return
	}
	rest, ok := strings.CutPrefix(path, "/s/")
	id, action, _ := strings.Cut(rest, "/")
	if !ok || id == "" {
		http.NotFound(w, r)
		return
	}
	if _, classified := actions[action]; !classified {
		http.Error(w, fmt.Sprintf("Forbidden: action %q is not classified by this server's policy", action), http.StatusForbidden)
		return
	}
	s := d.session(si, id)
	if s == nil {
		http.Error(w, fmt.Sprintf("Not found: no open session %q of yours", id), http.StatusNotFound)
		return
	}
	owner := s.Info().Owner
	if ownerOnly[action] && owner != si.user {
		http.Error(w, "Forbidden: only the session's owner may "+action+" (it acts as them)", http.StatusForbidden)
		return
	}
	start := time.Now()
	if err := d.audit(si.user, action, id, start, "started", ""); err != nil {
		http.Error(w, "refused: "+err.Error()+"; nothing was done", http.StatusInternalServerError)
		return
	}
	if action == "rewind" { // answered with a page of its own (rewind.go)
		d.serveRewind(w, r, si, s, start)
		return
	}
	msg, code := d.act(r, si, s, action)
	d.poke(id, owner)
	d.finishAction(w, r, si, action, id, start, msg, code)
}

// finishAction audits the outcome of an action and answers: the message as
// text to the script (X-Requested-With: dashboard), else a page — the
// session's (the list after a close) or the refusal.
func (d *Dashboard) finishAction(w http.ResponseWriter, r *http.Request, si *signin, action, id string, start time.Time, msg string, code int) {
	outcome, errText := "ok", ""
	if code >= 400 {
		outcome, errText = "error", msg
	}
	_ = d.audit(si.user, action, id, start, outcome, errText)
	d.log.Info("dashboard action", "user", si.user, "action", action, "session_id", id, "outcome", outcome)
	if r.Header.Get("X-Requested-With") == "dashboard" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		fmt.Fprintln(w, msg)
		return
	}
	if code >= 400 {
		d.render(w, code, errorPage{pageBase: d.base(si, "Refused"), Message: msg}.write)
		return
	}
	to := d.root + "/s/" + url.PathEscape(id)
	if action == "close" || action == "land" {
		to = d.root + "/"
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// audit audits an action (Options.Audit), if the dashboard audits.
func (d *Dashboard) audit(user, action, session string, start time.Time, outcome, errText string) error {
	if d.o.Audit == nil {
		return nil
	}
	return d.o.Audit.DashboardAction(user, action, session, start, outcome, errText)
}

// act carries out an action and says what happened, with an HTTP status.
func (d *Dashboard) act(r *http.Request, si *signin, s *sessions.Session, action string) (string, int) {
	switch action {
	case "interrupt":
		ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
		defer cancel()
		was, forced := s.Interrupt(ctx)
		switch {
		case forced:
			return "Interrupted; claude did not acknowledge in time, so its process was stopped (the session resumes on its next query).", http.StatusOK
		case was:
			return "Interrupted the running turn.", http.StatusOK
		}
		return "No turn was running.", http.StatusConflict
	case "close":
		if _, err := d.mgr.Close(s.ID); err != nil {
			return err.Error(), http.StatusConflict
		}
		// Counted among those the user sees (an admin: all), never others'.
		msg := fmt.Sprintf("Closed; %d session(s) remain open.", len(d.mine(si)))
		if w := s.WorktreeInfo(r.Context()); w != nil && !w.Removed {
			msg += fmt.Sprintf(" Its worktree is kept: %s (branch %s).", w.Path, w.Branch)
		}
		return msg, http.StatusOK
	case "land":
		return d.land(r, s)
	case "prompt":
		return d.prompt(r, s, r.PostFormValue("message"))
	case "steer":
		return d.steer(r, s, r.PostFormValue("message"))
	case "answer":
		return d.answerAction(r, s)
	}
	return "unknown action", http.StatusNotFound
}

// answerAction answers a question on s with the posted form: a decision on
// a permission, or the answers to the model's questions (DecisionAnswer).
func (d *Dashboard) answerAction(r *http.Request, s *sessions.Session) (string, int) {
	qid, decision, reason := r.PostFormValue("question"), r.PostFormValue("decision"), strings.TrimSpace(r.PostFormValue("reason"))
	reply := func(pr *turn.PermissionRequest) (*claudeagent.PermissionResult, error) {
		return d.answer(pr, decision, reason)
	}
	switch decision {
	case DecisionAllowOnce, DecisionAllowSession, DecisionDeny:
	case DecisionAnswer:
		reply = func(pr *turn.PermissionRequest) (*claudeagent.PermissionResult, error) {
			return answers(pr, r.PostForm)
		}
	default:
		return fmt.Sprintf("invalid decision %q: use %s, %s, %s or %s", decision, DecisionAllowOnce, DecisionAllowSession, DecisionDeny, DecisionAnswer), http.StatusBadRequest
	}
	ok, err := d.answerQuestion(s.ID, qid, reply)
	switch {
	case err != nil:
		return "That answer does not fit the question: " + err.Error(), http.StatusBadRequest
	case !ok:
		return "That question is no longer open: it was answered already (the first answer wins) or timed out.", http.StatusConflict
	}
	return "Answered: " + decision + ".", http.StatusOK
}
