// Package dashboard is the live web dashboard of the sessions (--ui):
// server-rendered pages of the sessions, a small script that follows them
// live over server-sent events (the text being written too), and actions
// — start a session, send a prompt, steer a running turn, interrupt it,
// close a session, answer a permission question.
//
// It owns its pages and their HTML (html*.go, no templates), the embedded
// script and style (static/), the sign-ins (the stdio secret link, bearer
// tokens over --http), each run's feed of steps, the spend chart, and the
// permission questions it offers on a page, raced with the client's
// elicitation. It reads the sessions through package sessions directly.
//
// It must not know the MCP server that runs the tools (package mcptools,
// which imports it and never the other way): what it needs of that server
// comes through Server (the running task of a session, what a permission
// question says and how a person's answer maps to the CLI's), SignIns (the
// HTTP transport's bearer tokens, see Mount) and Auditor (the audit log). It
// knows nothing of MCP: no tool calls, no MCP transport, no client's
// elicitation, no audit log's format.
//
// Who may look: on stdio the dashboard has a listener of its own on
// loopback, and a secret made at each start guards it: the link carrying it
// (logged at start, and claude_session_list's dashboardUrl) signs the
// browser in with a cookie. Its pages are under a root path made at start
// too, /ui/<random>, the cookie's path, so that no other server on
// 127.0.0.1 gets the cookie (signin.go). Over --http it is /ui on
// the same listener, and a person signs in with their bearer token: they
// see their own sessions, the users of Options.Admins every
// session. A sign-in is an HttpOnly, SameSite=Strict cookie naming an entry
// of the dashboard's memory (gone at restart; over HTTP bound to the token,
// so that revoking the token ends it; each user's own table); failed
// sign-ins are throttled.
//
// Safe by construction: model and tool output only ever reaches a page as
// text (every value escaped as the page is written; the script sets
// textContent); the Content-Security-Policy allows no inline script or
// style; an action needs the sign-in cookie, a same-origin Origin header
// and the token of the page it came from; a page without a sign-in is
// refused.
package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/weborigin"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

//go:embed static
var dashboardFiles embed.FS

// Options configure a Dashboard.
type Options struct {
	// BaseURL is where the dashboard's own listener is reached on stdio
	// (http://127.0.0.1:PORT); over --http the HTTP handler sets it.
	BaseURL string
	// Admins are the users (over --http) who see every session.
	Admins []string
	// Audit, when set, audits every action like a tool call.
	Audit  Auditor
	Logger *slog.Logger
}

// Auditor audits the dashboard's actions (the server's audit log).
type Auditor interface {
	// DashboardAction audits an action of user on a session: outcome
	// "started" before it runs (an error refuses the action), then "ok"
	// or "error" with errText.
	DashboardAction(user, action, session string, start time.Time, outcome, errText string) error
}

// Server is what the dashboard needs of the server that runs the tools
// (mcptools gives it with Attach). A field left nil goes without: no
// task is shown, a question reads as its tool's name, and an answer from
// a page is refused.
type Server struct {
	// RunningTask is the id of the MCP task running in a session, or "".
	RunningTask func(sessionID string) string
	// Question says what a permission question asks, for a person (as the
	// client's elicitation says it).
	Question func(*turn.PermissionRequest) string
	// Answer maps a person's answer on a page — a decision (DecisionAllowOnce,
	// DecisionAllowSession or DecisionDeny) and a reason — to the CLI's,
	// as the client's answer to the elicitation is mapped.
	Answer func(pr *turn.PermissionRequest, decision, reason string) (*claudeagent.PermissionResult, error)
}

// SignIns is the bearer tokens of the HTTP transport, with which a person
// signs in over --http (see Mount).
type SignIns interface {
	// Verify returns the user a bearer token belongs to and, when the
	// token grants fewer than --http-allow's classes (an OAuth token's
	// scopes), those (CreateOptions.Grant: the sessions the user starts
	// on a page are limited to them), or an error.
	Verify(ctx context.Context, token string, r *http.Request) (user string, grant *[]string, err error)
	// Holds reports whether user still holds the token whose SHA-256 is
	// hash (hex); false once it was revoked.
	Holds(hash, user string) bool
	// Failed records a failed sign-in from r, as a failed authentication.
	Failed(r *http.Request, reason string)
}

// Dashboard serves the dashboard's pages (its ServeHTTP takes paths under
// /ui/). Make it with New and pass it to the MCP server (mcptools'
// Options.Dashboard, which calls Attach and Watch) and, over HTTP, to the
// HTTP handler (mcptools' HTTPOptions.Dashboard, which calls Mount).
type Dashboard struct {
	mgr    *sessions.Manager
	o      Options
	log    *slog.Logger
	static http.Handler // the embedded files, at /
	key    []byte       // signs page tokens
	secret string       // stdio: what the link carries
	root   string       // the path of the pages: /ui/<random> on stdio, /ui over HTTP
	core   Server
	// Over --http (Mount): overHTTP, and the transport's tokens (nil when it
	// serves without authentication).
	overHTTP bool
	tokens   SignIns
	start    time.Time

	// Bounds of a run's feed, and the write timeout of an event stream
	// (tests lower them).
	maxSteps     int
	maxStepBytes int
	writeTimeout time.Duration
	maxSignins   int // a user's sign-ins at most

	throttle *throttle

	mu      sync.Mutex
	signins signinTable
	feeds   map[string]*Feed
	subs    map[*subscriber]struct{}
	pending map[string]*pendingQuestion // the dashboard's own questions, by id
	spend   *spendRecord                // what sessions cost over time, for the list's charts
}

const (
	cookieName    = "cam_ui"
	uiPrefix      = "/ui"
	defaultWindow = 2000
)

// New returns a dashboard of mgr's sessions.
func New(mgr *sessions.Manager, o Options) *Dashboard {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	d := &Dashboard{mgr: mgr, o: o, log: o.Logger, key: randomBytes(32), start: time.Now(), spend: newSpendRecord(),
		maxSteps: defaultWindow, maxStepBytes: 2 << 20, writeTimeout: 10 * time.Second, maxSignins: maxSigninsPerUser,
		throttle: newThrottle(time.Now), signins: newSigninTable(), feeds: map[string]*Feed{},
		subs: map[*subscriber]struct{}{}, pending: map[string]*pendingQuestion{}}
	d.secret = randomToken()
	d.root = uiPrefix + "/" + randomString(16) // 128 bits: see signin.go
	static, _ := fs.Sub(dashboardFiles, "static")
	d.static = http.FileServer(http.FS(static))
	return d
}

func randomToken() string { return randomString(32) }

// randomString is n random bytes, base64url.
func randomString(n int) string {
	return base64.RawURLEncoding.EncodeToString(randomBytes(n))
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// Attach gives the dashboard what it needs of the MCP server; the server
// calls it as it is made (mcptools.NewServer).
func (d *Dashboard) Attach(c Server) { d.core = c }

// URL is the dashboard's address for a person: on stdio the link that
// carries the secret; over HTTP the sign-in page.
func (d *Dashboard) URL() string {
	base := strings.TrimRight(d.o.BaseURL, "/")
	if d.overHTTP {
		return base + d.root + "/"
	}
	return base + d.root + "/?secret=" + d.secret
}

// SessionURL is the address of session id's page over HTTP, without a
// sign-in (for links sent elsewhere: whoever opens one signs in first);
// "" on stdio, where the pages' root is itself a secret (it keeps the
// cookie from other servers on the same loopback address) and a link sent
// to a webhook would carry it.
func (d *Dashboard) SessionURL(id string) string {
	if !d.overHTTP {
		return ""
	}
	return strings.TrimRight(d.o.BaseURL, "/") + d.root + "/s/" + url.PathEscape(id)
}

// Mount is called by the HTTP handler that serves the dashboard at /ui,
// at baseURL: sign-ins then use its bearer tokens (nil: it serves without
// authentication, and nobody signs in), and the pages are at /ui (a
// person types it, and signs in there).
func (d *Dashboard) Mount(baseURL string, tokens SignIns) {
	d.overHTTP = true
	d.tokens = tokens
	d.o.BaseURL = baseURL
	d.root = uiPrefix
}

func (d *Dashboard) admin(user string) bool {
	return d.overHTTP && slices.Contains(d.o.Admins, user)
}

// ServeHTTP serves the pages under /ui/.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	if !d.hostAllowed(r) {
		http.Error(w, "Forbidden: this dashboard answers only at "+d.o.BaseURL, http.StatusForbidden)
		return
	}
	path, ok := strings.CutPrefix(r.URL.Path, d.root)
	if !ok || path != "" && path[0] != '/' {
		d.refuse(w, r) // on stdio: outside the root, which only the link names
		return
	}
	switch {
	case path == "" || path == "/" && r.URL.Query().Has("secret"):
		if path == "" {
			http.Redirect(w, r, d.root+"/", http.StatusSeeOther)
			return
		}
		d.secretSignin(w, r)
		return
	case strings.HasPrefix(path, "/static/"):
		w.Header().Set("Cache-Control", "no-cache")
		http.StripPrefix(d.root+"/static", d.static).ServeHTTP(w, r)
		return
	case path == "/signin":
		d.serveSignin(w, r)
		return
	}
	si := d.signedIn(r)
	if si == nil {
		d.refuse(w, r)
		return
	}
	if r.Method == http.MethodPost {
		if path == "/signout" {
			d.signout(w, r, si)
			return
		}
		d.serveAction(w, r, si, path)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch {
	case path == "/":
		d.serveList(w, r, si, false)
	case path == "/rows":
		d.serveList(w, r, si, true)
	case path == "/events":
		d.serveEvents(w, r, si)
	case strings.HasPrefix(path, "/s/"):
		id, frag, _ := strings.Cut(strings.TrimPrefix(path, "/s/"), "/")
		switch frag {
		case "", "panel", "history":
			d.serveSession(w, r, si, id, frag)
		case "diff":
			d.serveDiff(w, r, si, id)
		default:
			http.NotFound(w, r)
		}
	default:
		http.NotFound(w, r)
	}
}

// securityHeaders: no inline script or style, no framing, no referrer to
// other sites, nothing cached. (Not no-referrer: with it a browser sends
// "Origin: null" with the pages' own form posts, which the Origin check
// must refuse.)
func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// hostAllowed: on stdio the request must name the loopback listener (a
// page of another site whose name was rebound to 127.0.0.1 names its own).
func (d *Dashboard) hostAllowed(r *http.Request) bool {
	if d.overHTTP {
		return true // the sign-in cookie belongs to the host it was set for
	}
	u, err := url.Parse(d.o.BaseURL)
	if err != nil {
		return false
	}
	_, port, _ := net.SplitHostPort(u.Host)
	host, rport, err := net.SplitHostPort(r.Host)
	if err != nil || rport != port {
		return false
	}
	return host == "localhost" || host == "127.0.0.1" || host == "::1" || host == u.Hostname()
}

// refuse answers a request without a sign-in: over HTTP the sign-in page
// (for a page) or 401; on stdio 403 naming the link. The page does not
// name the stdio root (renderPublic).
func (d *Dashboard) refuse(w http.ResponseWriter, r *http.Request) {
	if d.overHTTP && r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, uiPrefix+"/events") {
		http.Redirect(w, r, uiPrefix+"/signin", http.StatusSeeOther)
		return
	}
	msg := "Forbidden: open the dashboard with the link the server logged at start (claude_session_list's dashboardUrl)."
	code := http.StatusForbidden
	if d.overHTTP {
		msg, code = "Unauthorized: sign in at "+uiPrefix+"/signin with your bearer token.", http.StatusUnauthorized
	}
	d.renderPublic(w, code, errorPage{pageBase: pageBase{Title: "Not signed in"}, Message: msg}.write)
}

// sameOrigin: an action's Origin header must be present and the
// dashboard's own (browsers send it with every POST).
func (d *Dashboard) sameOrigin(r *http.Request) bool {
	vals := r.Header.Values("Origin")
	if len(vals) != 1 {
		return false
	}
	o := weborigin.Of(vals[0])
	if o == "" {
		return false
	}
	if o == weborigin.Of(d.o.BaseURL) {
		return true
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return o == weborigin.Of(scheme+"://"+r.Host) && d.hostAllowed(r)
}

// pageToken is a new token for a page shown to si: a nonce and its MAC
// under the sign-in.
func (d *Dashboard) pageToken(si *signin) string {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(nonce) + "." + base64.RawURLEncoding.EncodeToString(d.pageMAC(si, nonce))
}

func (d *Dashboard) pageMAC(si *signin, nonce []byte) []byte {
	mac := hmac.New(sha256.New, d.key)
	mac.Write([]byte(si.user + "\x00" + si.tokenHash + "\x00" + si.expires.String() + "\x00"))
	mac.Write(nonce)
	return mac.Sum(nil)
}

// checkPageToken checks the token an action carries (form field csrf, or
// header X-CSRF-Token) against the sign-in.
func (d *Dashboard) checkPageToken(r *http.Request, si *signin) bool {
	tok := r.Header.Get("X-CSRF-Token")
	if tok == "" {
		tok = r.PostFormValue("csrf")
	}
	n, m, ok := strings.Cut(tok, ".")
	nonce, err1 := base64.RawURLEncoding.DecodeString(n)
	mac, err2 := base64.RawURLEncoding.DecodeString(m)
	return ok && err1 == nil && err2 == nil && len(nonce) == 16 && hmac.Equal(mac, d.pageMAC(si, nonce))
}

// visible reports whether si may see a session of owner.
func (d *Dashboard) visible(si *signin, owner string) bool {
	return owner == si.user || d.admin(si.user)
}

// Revoke ends the sign-ins and event streams of users (removed from the
// tokens file); d may be nil.
func (d *Dashboard) Revoke(users []string) {
	if d != nil {
		d.endSignins(users)
	}
}
