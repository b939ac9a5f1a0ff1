package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/dashboard"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// Tests of watching and steering from the dashboard (issue 31): the text
// being written streams to a page, a page opened mid-turn gets the turn so
// far, and the actions that give Claude something to do — start, prompt,
// steer — keep the guards of every action.

// startQuery calls claude_chat_query in the background; the result comes
// on the channel.
func (e *dashEnv) startQuery(sid, prompt string) <-chan *mcp.CallToolResult {
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "claude_chat_query", Arguments: map[string]any{"sessionId": sid, "prompt": prompt}})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		done <- res
	}()
	return done
}

// liveView is what a page's script makes of its stream: the prompt, the
// text being written, the steps' kinds.
type liveView struct {
	prompt  string
	steered bool
	partial string
	kinds   []string
	steps   []dashboard.UIStep
}

// until reads the stream into v until ok says so (or the stream ends).
func (s *sse) until(t *testing.T, v *liveView, ok func(name string) bool) {
	t.Helper()
	for {
		name, data := s.next(t, "turn", "prompt", "step", "partial", "panel")
		switch name {
		case "turn":
			*v = liveView{}
		case "prompt":
			var p struct {
				Text    string `json:"text"`
				Steered bool   `json:"steered"`
			}
			_ = json.Unmarshal([]byte(data), &p)
			v.prompt, v.steered = p.Text, p.Steered
		case "partial":
			var p struct {
				Text  string `json:"text"`
				Reset bool   `json:"reset"`
			}
			_ = json.Unmarshal([]byte(data), &p)
			if p.Reset {
				v.partial = ""
			}
			v.partial += p.Text
		case "step":
			var st dashboard.UIStep
			_ = json.Unmarshal([]byte(data), &st)
			v.kinds, v.steps = append(v.kinds, st.Kind), append(v.steps, st)
			if st.Kind == "text" {
				v.partial = ""
			}
		}
		if ok(name) {
			return
		}
	}
}

func (v *liveView) has(kind string) bool {
	for _, k := range v.kinds {
		if k == kind {
			return true
		}
	}
	return false
}

// TestDashboardLiveText: the text being written reaches an open page as it
// grows ("partial" events, before the turn's whole text and its end), and
// a page opened in the middle of the turn gets its prompt, its steps and
// the text so far, then goes on live; when the turn ends the page is told
// to refresh its panel, whose history then holds the turn.
func TestDashboardLiveText(t *testing.T) {
	e := newDashEnv(t, "2025-11-25", nil)
	sid := e.create(t, nil)
	c := browser(t)
	e.signIn(t, c)
	first := openSSE(t, c, e.ui+"/events?session="+sid)
	done := e.startQuery(sid, "SLOW6 count slowly")
	var v liveView
	first.until(t, &v, func(string) bool { return strings.Contains(v.partial, "chunk1 ") })
	if v.has("text") || v.has("done") {
		t.Fatalf("the text so far came only with the whole text: %v", v.kinds)
	}
	if v.prompt != "SLOW6 count slowly" || v.steered {
		t.Errorf("the page's prompt = %q (steered %v)", v.prompt, v.steered)
	}
	// The page opened now says the turn runs and marks the text being
	// written live.
	_, _, page := get(t, c, e.ui+"/s/"+sid)
	if !liveStatus.MatchString(page) || !strings.Contains(page, `<small id="live-status">running</small>`) {
		t.Errorf("a page opened mid-turn does not say the turn runs:\n%s", liveStatus.FindString(page))
	}
	if m := writingBlock.FindString(page); !strings.Contains(m, `<span class="live">live</span> Claude is writing…`) || !strings.Contains(m, `<pre id="partial">`) {
		t.Errorf("the text being written is not marked live on the page:\n%s", m)
	}
	// A page opened now, mid-turn, gets the turn so far.
	second := openSSE(t, c, e.ui+"/events?session="+sid)
	var w liveView
	second.until(t, &w, func(name string) bool { return name == "partial" })
	if w.prompt != "SLOW6 count slowly" || !w.has("turn_started") || !strings.HasPrefix(w.partial, "chunk0 chunk1 ") || w.has("done") {
		t.Errorf("a page opened mid-turn: prompt %q, steps %v, text so far %q", w.prompt, w.kinds, w.partial)
	}
	second.until(t, &w, func(name string) bool { return name == "step" && w.has("done") })
	if !w.has("text") || w.partial != "" {
		t.Errorf("the whole text did not replace the text being written: steps %v, partial %q", w.kinds, w.partial)
	}
	if res := <-done; res.IsError {
		t.Fatalf("the query: %s", mcptest.Text(res))
	}
	// The panel (and with it the history) is refreshed once the turn is
	// recorded: its history then holds the prompt.
	for {
		second.next(t, "panel")
		if _, _, h := get(t, c, e.ui+"/s/"+sid+"/history"); strings.Contains(h, "SLOW6 count slowly") && strings.Contains(h, "chunk5") {
			break
		}
	}
	if _, _, page := get(t, c, e.ui+"/s/"+sid); !strings.Contains(page, `<small id="live-status"></small>`) {
		t.Errorf("a page opened after the turn says it runs:\n%s", liveStatus.FindString(page))
	}
}

// The live turn's status, and the block of the text being written, on a
// session's page.
var (
	liveStatus   = regexp.MustCompile(`<small id="live-status">[^<]*</small>`)
	writingBlock = regexp.MustCompile(`(?s)<div id="writing"[^>]*>.*?</pre>`)
)

// compose posts an action of the compose form as the script does; it
// returns the status and the message shown beside the form.
func (e *dashEnv) compose(t *testing.T, c *http.Client, sid, action, token, message string) (int, string) {
	t.Helper()
	return post(t, c, e.ui+"/s/"+sid+"/"+action, url.Values{"csrf": {token}, "message": {message}},
		map[string]string{"Origin": e.url, "X-Requested-With": "dashboard"})
}

// TestDashboardPromptAndSteer: a prompt sent from the page runs a turn
// that the page follows and claude_chat_wait collects; steering its
// running answer shows the message on the page, marked as a steer, and the
// follow-up turn that answers it is marked steered; steering an idle
// session is refused with the reason shown; each action is audited.
func TestDashboardPromptAndSteer(t *testing.T) {
	e := newDashEnv(t, "2025-11-25", nil)
	sid := e.create(t, nil)
	c := browser(t)
	e.signIn(t, c)
	_, _, page := get(t, c, e.ui+"/s/"+sid)
	token := pageTokenOf(t, page)
	if !strings.Contains(page, `id="compose"`) || !strings.Contains(page, `id="steer" formaction=`) {
		t.Fatalf("no compose form on the owner's page:\n%s", page)
	}
	code, msg := e.compose(t, c, sid, "steer", token, "stop and say hi")
	if code != http.StatusConflict || !strings.Contains(msg, "is idle") || !strings.Contains(msg, "Send as a prompt") {
		t.Errorf("steering an idle session: %d %q", code, msg)
	}
	stream := openSSE(t, c, e.ui+"/events?session="+sid)
	if code, msg := e.compose(t, c, sid, "prompt", token, "SLOW6 from the page"); code != http.StatusOK {
		t.Fatalf("the prompt: %d %s", code, msg)
	}
	var v liveView
	stream.until(t, &v, func(string) bool { return strings.Contains(v.partial, "chunk0") })
	if v.prompt != "SLOW6 from the page" {
		t.Errorf("the page's prompt: %q", v.prompt)
	}
	if code, msg := e.compose(t, c, sid, "prompt", token, "a second prompt"); code != http.StatusConflict || !strings.Contains(msg, "steer it instead") {
		t.Errorf("a prompt to a running session: %d %q", code, msg)
	}
	if code, msg := e.compose(t, c, sid, "steer", token, "also say hi"); code != http.StatusOK {
		t.Fatalf("the steer: %d %s", code, msg)
	}
	stream.until(t, &v, func(name string) bool { return name == "step" && v.has("steer") })
	if st := v.steps[len(v.steps)-1]; st.Text != "also say hi" {
		t.Errorf("the steer step: %+v", st)
	}
	// The CLI answers the message while the answer streamed: a follow-up
	// turn, shown as steered.
	stream.until(t, &v, func(name string) bool { return name == "prompt" && v.steered })
	if v.prompt != "also say hi" {
		t.Errorf("the follow-up's prompt: %q", v.prompt)
	}
	// The page's run and then the follow-up are collected by
	// claude_chat_wait.
	_, out := mcptest.CallJSON(t, e.cs, "claude_chat_wait", map[string]any{"sessionId": sid})
	if ft, _ := out["finalText"].(string); !strings.Contains(ft, "chunk5") {
		t.Errorf("claude_chat_wait after the page's prompt: %v", out)
	}
	audit := e.audit.String()
	for _, want := range []string{`"tool":"ui:prompt","session":"` + sid + `","outcome":"ok"`, `"tool":"ui:steer","session":"` + sid + `","outcome":"ok"`,
		`"tool":"ui:steer","session":"` + sid + `","outcome":"error"`} {
		if !strings.Contains(audit, want) {
			t.Errorf("the audit log lacks %s:\n%s", want, audit)
		}
	}
}

// TestDashboardComposeRefusals: start, prompt and steer without the page's
// token or from another origin are refused and do nothing.
func TestDashboardComposeRefusals(t *testing.T) {
	e := newDashEnv(t, "2025-11-25", nil)
	sid := e.create(t, nil)
	c := browser(t)
	e.signIn(t, c)
	_, _, page := get(t, c, e.ui+"/")
	token := pageTokenOf(t, page)
	form := url.Values{"message": {"SLOW2"}, "cwd": {t.TempDir()}, "prompt": {"hi"}}
	for _, path := range []string{"/s/" + sid + "/prompt", "/s/" + sid + "/steer", "/new"} {
		if code, _ := post(t, c, e.ui+path, form, map[string]string{"Origin": e.url}); code != http.StatusForbidden {
			t.Errorf("%s without the page's token: %d", path, code)
		}
		withToken := url.Values{"csrf": {token}}
		for k, vs := range form {
			withToken[k] = vs
		}
		if code, _ := post(t, c, e.ui+path, withToken, map[string]string{"Origin": "https://evil.example"}); code != http.StatusForbidden {
			t.Errorf("%s from another origin: %d", path, code)
		}
	}
	if n := e.mgr.Count(); n != 1 {
		t.Errorf("%d sessions after the refused starts", n)
	}
	if strings.Contains(e.audit.String(), `"tool":"ui:`) {
		t.Errorf("a refused action was audited as run:\n%s", e.audit.String())
	}
	if s, _ := e.mgr.Get(sid); s == nil || s.Info().Queries != 0 {
		t.Errorf("a refused prompt ran")
	}
}

// TestDashboardStart: the list's form starts a session with its options
// and a first prompt, which answers; a bad directory is refused with the
// reason.
func TestDashboardStart(t *testing.T) {
	e := newDashEnv(t, "2025-11-25", nil)
	c := browser(t)
	e.signIn(t, c)
	_, _, page := get(t, c, e.ui+"/")
	if !strings.Contains(page, `action="`+e.d.Root()+`/new"`) {
		t.Fatalf("no start form on the list:\n%s", page)
	}
	token := pageTokenOf(t, page)
	cwd := t.TempDir()
	code, body := post(t, c, e.ui+"/new", url.Values{"csrf": {token}, "cwd": {cwd}, "name": {"from-the-page"}, "prompt": {"hello from the page"}},
		map[string]string{"Origin": e.url, "X-Requested-With": "dashboard"})
	if code != http.StatusOK || !strings.Contains(body, "Started session") {
		t.Fatalf("the start: %d %s", code, body)
	}
	sid := regexp.MustCompile(`Started session ([0-9a-f-]+)\.`).FindStringSubmatch(body)[1]
	_, out := mcptest.CallJSON(t, e.cs, "claude_chat_wait", map[string]any{"sessionId": sid})
	if out["status"] == "error" || out["finalText"] == nil {
		t.Errorf("the first prompt's answer: %v", out)
	}
	s, err := e.mgr.Get(sid)
	if err != nil || s.Info().Name != "from-the-page" || s.Info().Cwd != cwd {
		t.Errorf("the session started: %v %+v", err, s)
	}
	code, body = post(t, c, e.ui+"/new", url.Values{"csrf": {token}, "cwd": {"relative/dir"}}, map[string]string{"Origin": e.url, "X-Requested-With": "dashboard"})
	if code < 400 || !strings.Contains(body, "Not started") || !strings.Contains(body, "relative/dir") {
		t.Errorf("a relative cwd: %d %s", code, body)
	}
	if a := e.audit.String(); !strings.Contains(a, `"tool":"ui:start","session":"`+sid+`","outcome":"ok"`) || !strings.Contains(a, `"tool":"ui:start","outcome":"error"`) {
		t.Errorf("the starts are not audited:\n%s", a)
	}
}

// TestDashboardWaitingFirst: a session whose run waits for a permission
// answer (queued in the run of a prompt the page sent: nothing pokes the
// list) is listed first, marked, and the title counts it; the list's
// stream says it changed.
func TestDashboardWaitingFirst(t *testing.T) {
	e := newDashEnv(t, "2025-11-25", nil)
	first := e.create(t, map[string]any{"name": "first"})
	waiting := e.create(t, map[string]any{"name": "waiting"})
	c := browser(t)
	e.signIn(t, c)
	_, _, list := get(t, c, e.ui+"/")
	if strings.Index(list, first) > strings.Index(list, waiting) || strings.Contains(list, "<title>(") {
		t.Fatalf("the list before any question: the oldest first, no count expected")
	}
	stream := openSSE(t, c, e.ui+"/events")
	_, _, page := get(t, c, e.ui+"/s/"+waiting)
	if code, msg := e.compose(t, c, waiting, "prompt", pageTokenOf(t, page), "TOOL_BASH[echo hi]"); code != http.StatusOK {
		t.Fatalf("the prompt: %d %s", code, msg)
	}
	for len(e.d.Questions(waiting)) == 0 || !strings.Contains(list, "<title>(1) Sessions") {
		stream.next(t, "changed")
		_, _, list = get(t, c, e.ui+"/")
	}
	_, _, rows := get(t, c, e.ui+"/rows")
	if i, j := strings.Index(rows, `data-session="`+waiting+`"`), strings.Index(rows, `data-session="`+first+`"`); i < 0 || i > j {
		t.Errorf("the waiting session is not listed first:\n%s", rows)
	}
	if !strings.Contains(rows, `class="session waiting"`) || !strings.Contains(rows, `data-waiting="1"`) || !strings.Contains(rows, "waits for an answer: 1 question(s)") {
		t.Errorf("the waiting session is not marked:\n%s", rows)
	}
}

// TestDashboardComposeUsers: over HTTP another user's session is not
// found for a prompt or a steer (as for its page), an admin may not act as
// its owner, and a session started on a page is the signed-in user's and
// goes through the gate as theirs (an option --http-allow does not allow
// is refused with the reason).
func TestDashboardComposeUsers(t *testing.T) {
	e := newDashHTTP(t, sessions.Config{})
	aliceSID := mcptest.CreateSession(t, e.connect(t, "alice-secret", "2025-11-25"))
	act := func(c *http.Client, path string, form url.Values) (int, string) {
		_, _, page := get(t, c, e.base+"/ui/")
		form.Set("csrf", pageTokenOf(t, page))
		return post(t, c, e.base+"/ui"+path, form, map[string]string{"Origin": e.base, "X-Requested-With": "dashboard"})
	}
	bob, _ := e.signIn(t, "bob-secret")
	root, _ := e.signIn(t, "root-secret")
	for _, action := range []string{"prompt", "steer"} {
		if code, msg := act(bob, "/s/"+aliceSID+"/"+action, url.Values{"message": {"hi"}}); code != http.StatusNotFound || !strings.Contains(msg, "no open session") {
			t.Errorf("bob's %s to alice's session: %d %s", action, code, msg)
		}
		if code, msg := act(root, "/s/"+aliceSID+"/"+action, url.Values{"message": {"hi"}}); code != http.StatusForbidden || !strings.Contains(msg, "only the session's owner") {
			t.Errorf("the admin's %s to alice's session: %d %s", action, code, msg)
		}
	}
	alice, _ := e.signIn(t, "alice-secret")
	code, msg := act(alice, "/new", url.Values{"cwd": {t.TempDir()}, "permissionMode": {"bypassPermissions"}})
	if code < 400 || !strings.Contains(msg, "Not started") || !strings.Contains(msg, "--http-allow") {
		t.Errorf("a start with an option --http-allow does not allow: %d %s", code, msg)
	}
	code, msg = act(alice, "/new", url.Values{"cwd": {t.TempDir()}, "name": {"alices-page-session"}})
	if code != http.StatusOK {
		t.Fatalf("alice's start: %d %s", code, msg)
	}
	sid := regexp.MustCompile(`Started session ([0-9a-f-]+)\.`).FindStringSubmatch(msg)[1]
	if s, err := e.mgr.Get(sid); err != nil || s.Info().Owner != "alice" {
		t.Errorf("the session alice started on the page: %v %+v", err, s)
	}
	if _, _, list := get(t, bob, e.base+"/ui/"); strings.Contains(list, "alices-page-session") {
		t.Error("bob's list shows the session alice started")
	}
}
