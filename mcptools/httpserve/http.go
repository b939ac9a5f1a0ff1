// Package httpserve serves the MCP server over streamable HTTP (--http): one
// URL for clients of every protocol era, bearer tokens from the tokens file
// (reloaded on SIGHUP, revocation ending a user's calls, sessions and
// sign-ins), the Origin check, timeouts and limits on bodies and MCP
// sessions, the dashboard mounted under /ui, and the authentication events
// the audit log is told of. It knows the mcp.Server it serves, the session
// manager (to close a revoked user's sessions) and the dashboard; nothing of
// the tools, whose handlers read the caller's user from the request.
package httpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/debuglog"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/weborigin"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/dashboard"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/stdio"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// Serving over streamable HTTP: one URL (/mcp) for clients of every
// protocol era. A request of protocol 2026-07-28 or later (or
// server/discover) goes to a stateless handler, the only one of the SDK's
// that speaks that era (and so MCP tasks and input-required results); an
// older client goes to a stateful one, with its Mcp-Session-Id and
// server-to-client requests (elicitation). Both serve the same server, and
// the sessions live in the manager either way. Bearer tokens name the user
// (see Tokens); /healthz answers without one.
//
// Before a request reaches the SDK: a foreign Origin gets 403, a missing or
// unknown token 401 (logged, see AuthEvent), a body over MaxBodyBytes 413,
// and one that does not fit in MaxBodyBytesInFlight 503. Removing a user
// from the tokens file revokes them (see Revoke). The limits of the
// connections themselves are Server's (httplimits.go).

// HTTPOptions configure the HTTP handler.
type HTTPOptions struct {
	// Tokens authenticates requests; nil serves without authentication
	// (loopback only; see the command), unless OAuth is set.
	Tokens *Tokens
	// OAuth, when set, verifies the bearer tokens that are JWTs (see
	// OAuth); the others go to Tokens (none, when nil). The protected
	// resource metadata names its issuer.
	OAuth *OAuth
	// BaseURL is the server's public URL (scheme and host), for the
	// protected resource metadata that a 401 points to; its origin is the
	// server's own (see sameOrigin).
	BaseURL string
	Logger  *slog.Logger
	// Manager holds the sessions: revoking a user interrupts the running
	// turns of theirs (nil: none).
	Manager *sessions.Manager
	// OnAuthEvent, when set, is told of every failed authentication (not
	// rate-limited, unlike the log), tokens reload, failed reload and
	// revoked user, say for the audit log. It must not block.
	OnAuthEvent func(AuthEvent)
	// MaxBodyBytes caps a request body (--max-frame-bytes; 0:
	// stdio.DefaultMaxFrameBytes): a longer one gets 413.
	MaxBodyBytes int64
	// MaxBodyBytesInFlight caps the bytes of request bodies held at once
	// (0: twice MaxBodyBytes, at least 16 MiB): a body beyond it gets 503
	// with Retry-After.
	MaxBodyBytesInFlight int64
	// MaxSessions caps the stateful MCP sessions (clients of protocols
	// before 2026-07-28) held at once (0: DefaultHTTPMaxSessions);
	// UserMaxSessions caps one user's (0: a tenth of MaxSessions, at least
	// 10). A new session beyond either gets 503.
	MaxSessions, UserMaxSessions int
	// SessionIdle closes a stateful MCP session that has had no request
	// for this long (0: never).
	SessionIdle time.Duration
	// Dashboard, when set, is served at /ui (--ui); its sign-ins take
	// the bearer tokens, and revoking a user ends theirs.
	Dashboard *dashboard.Dashboard
	// ReadTimeout, WriteTimeout and IdleTimeout are those of the server
	// that Server returns (0: the defaults; see there).
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
}

// AuthEvent is a security event of the HTTP transport. It never holds a
// token.
type AuthEvent struct {
	Kind   string // AuthFailed, TokensReloaded, TokensReloadFailed or Revoked
	User   string // the user revoked; "" otherwise (a failed request's user is unknown)
	Remote string // the failed request's remote address (host:port)
	Reason string
}

// The kinds of AuthEvent.
const (
	AuthFailed         = "auth_failed"
	TokensReloaded     = "tokens_reloaded"
	TokensReloadFailed = "tokens_reload_failed"
	Revoked            = "revoked"
)

// errRevoked cancels the requests and calls of a revoked user.
var errRevoked = errors.New("the user was removed from --tokens-file")

// HTTPHandler serves /mcp, /healthz and the protected resource metadata.
type HTTPHandler struct {
	o                   HTTPOptions
	srv                 *mcp.Server
	log                 *slog.Logger
	mux                 *http.ServeMux
	stateful, stateless *mcp.StreamableHTTPHandler
	authed              http.Handler // serveUser behind the bearer token check
	metaURL             string
	origin              string // BaseURL's origin
	bodies              byteBudget
	authLog             authLimiter

	mu      sync.Mutex
	live    map[string]map[*inflight]struct{} // user → their HTTP requests and MCP calls in progress
	mcpSess map[string]string                 // Mcp-Session-Id → user, stateful sessions
	opening map[string]int                    // user → stateful sessions being opened
}

// inflight is an HTTP request or MCP call in progress, cancelled when its
// user is revoked.
type inflight struct {
	cancel context.CancelCauseFunc
	call   bool // an MCP method call, not an HTTP request
}

// NewHTTPHandler returns the HTTP handler of srv: /mcp, /healthz and the
// protected resource metadata. It adds a receiving middleware to srv (the
// MCP calls of a revoked user are cancelled).
func NewHTTPHandler(srv *mcp.Server, o HTTPOptions) *HTTPHandler {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = stdio.DefaultMaxFrameBytes
	}
	if o.MaxBodyBytesInFlight <= 0 {
		o.MaxBodyBytesInFlight = max(2*o.MaxBodyBytes, 16<<20)
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultHTTPMaxSessions
	}
	if o.UserMaxSessions <= 0 {
		o.UserMaxSessions = min(o.MaxSessions, max(o.MaxSessions/10, 10))
	}
	if o.OAuth != nil && o.Tokens == nil {
		o.Tokens = &Tokens{} // no file: every token that is not a JWT is unknown
	}
	h := &HTTPHandler{o: o, srv: srv, log: o.Logger, mux: http.NewServeMux(), origin: weborigin.Of(o.BaseURL),
		metaURL: strings.TrimRight(o.BaseURL, "/") + metaPath,
		bodies:  byteBudget{limit: o.MaxBodyBytesInFlight},
		live:    map[string]map[*inflight]struct{}{}, mcpSess: map[string]string{}, opening: map[string]int{}}
	get := func(*http.Request) *mcp.Server { return srv }
	sdkLog := slog.New(debuglog.Handler(o.Logger.Handler()))
	h.stateful = mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Logger: sdkLog, MaxRequestBodyBytes: o.MaxBodyBytes,
		SessionTimeout: o.SessionIdle})
	h.stateless = mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true, Logger: sdkLog,
		MaxRequestBodyBytes: o.MaxBodyBytes, PropagateRequestCancellation: true})
	if o.Tokens != nil {
		h.authed = auth.RequireBearerToken(h.verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: h.metaURL,
			AllowMissingExpiration: true, ClockSkew: OAuthLeeway})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h.serveUser(w, r, auth.TokenInfoFromContext(r.Context()))
			}))
		h.serveMetadata()
		srv.AddReceivingMiddleware(h.trackCalls)
	}
	h.mux.HandleFunc("/mcp", h.serveMCP)
	if o.Dashboard != nil {
		o.Dashboard.Mount(h.o.BaseURL, h.dashboardTokens())
		h.mux.Handle("/ui", o.Dashboard)
		h.mux.Handle("/ui/", o.Dashboard)
	}
	h.mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
	})
	return h
}

// metaPath is the protected resource metadata's path (RFC 9728); it is
// served at metaPath+"/mcp" too, the path RFC 9728 gives the metadata of
// the resource /mcp.
const metaPath = "/.well-known/oauth-protected-resource"

// serveMetadata serves the protected resource metadata, which a 401's
// WWW-Authenticate points to: the resource (/mcp), and with OAuth its
// authorization server and the scopes that grant --http-allow classes.
func (h *HTTPHandler) serveMetadata() {
	meta := &oauthex.ProtectedResourceMetadata{
		Resource: strings.TrimRight(h.o.BaseURL, "/") + "/mcp", BearerMethodsSupported: []string{"header"},
		ResourceName: "claude-agent-mcp",
	}
	if h.o.OAuth != nil {
		meta.AuthorizationServers = []string{h.o.OAuth.Issuer()}
		meta.ScopesSupported = h.o.OAuth.Scopes()
	}
	handler := auth.ProtectedResourceMetadataHandler(meta)
	h.mux.Handle(metaPath, handler)
	h.mux.Handle(metaPath+"/mcp", handler)
}

func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// serveMCP serves /mcp: the origin, then the token.
func (h *HTTPHandler) serveMCP(w http.ResponseWriter, r *http.Request) {
	if origin, ok := h.sameOrigin(r); !ok {
		http.Error(w, fmt.Sprintf("Forbidden: Origin %q is not this server's (%s)", origin, h.origin), http.StatusForbidden)
		return
	}
	if h.o.Tokens == nil {
		h.serveUser(w, r, nil)
		return
	}
	if f := strings.Fields(r.Header.Get("Authorization")); len(f) != 2 || !strings.EqualFold(f[0], "bearer") {
		h.authFailed(r, "no bearer token")
	}
	h.authed.ServeHTTP(w, r)
}

// verify checks a bearer token: a JWT against the OAuth issuer when there
// is one, any other against the tokens file. A failure is logged and
// reported.
func (h *HTTPHandler) verify(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	if h.o.OAuth != nil && looksLikeJWT(token) {
		info, err := h.o.OAuth.verify(ctx, token)
		if err != nil {
			h.authFailed(r, err.Error())
		}
		return info, err
	}
	info, err := h.o.Tokens.verify(ctx, token, r)
	if err != nil {
		h.authFailed(r, "unknown token")
	}
	return info, err
}

// revoked reports whether the user of info has lost their token since it
// was checked: they are no longer in the tokens file. (A JWT stands until
// it expires, which every request checks.)
func (h *HTTPHandler) revoked(info *auth.TokenInfo) bool {
	return !fromOAuth(info) && !h.o.Tokens.Has(info.UserID)
}

// serveUser serves an authenticated request of the user of info (nil
// without tokens): tracked for revocation, its body read (within the
// limits), its deadlines set for a long call or stream, then handed to the
// SDK.
func (h *HTTPHandler) serveUser(w http.ResponseWriter, r *http.Request, info *auth.TokenInfo) {
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	user := ""
	if info != nil {
		user = info.UserID
		c := h.track(user, &inflight{cancel: cancel})
		defer h.untrack(user, c)
		if h.revoked(info) { // since its token was checked
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer resource_metadata=%q", h.metaURL))
			http.Error(w, "invalid token: revoked", http.StatusUnauthorized)
			return
		}
	}
	r = r.WithContext(ctx)
	dw := newDeadlineWriter(w, h.o.WriteTimeout)
	defer dw.renew() // room for the server's last writes after a quiet stream
	body, release, ok := h.readBody(dw, r)
	if !ok {
		return
	}
	defer release()
	switch {
	case modernRequest(r, body):
		h.stateless.ServeHTTP(dw, r)
	case r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "":
		h.openSession(dw, r, info)
	default:
		h.stateful.ServeHTTP(dw, r)
	}
	if errors.Is(context.Cause(ctx), errRevoked) {
		panic(http.ErrAbortHandler) // cut the response: the call ends with an error
	}
}

// modernRequest tells whether r belongs to protocol 2026-07-28 or later:
// by its MCP-Protocol-Version header, or, for a POST without a session,
// by its body (server/discover, or the protocol version in _meta).
func modernRequest(r *http.Request, body []byte) bool {
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
		return v >= "2026-07-28"
	}
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
		return false
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return false // let the SDK answer it
	}
	if msg.Method == "server/discover" {
		return true
	}
	v, _ := msg.Params.Meta[mcp.MetaKeyProtocolVersion].(string)
	return v >= "2026-07-28"
}

// sameOrigin checks r's Origin header: absent, or the server's own — the
// origin of BaseURL, or that of the Host the request was sent to. Any
// other value, "null" included, is foreign (the streamable HTTP transport
// says a server MUST refuse it, against DNS rebinding). It returns the
// header as found.
func (h *HTTPHandler) sameOrigin(r *http.Request) (string, bool) {
	vals, present := r.Header["Origin"]
	if !present {
		return "", true
	}
	if len(vals) != 1 {
		return strings.Join(vals, ", "), false
	}
	o := weborigin.Of(vals[0])
	if u, err := url.Parse(vals[0]); o == "" || err != nil || u.Path != "" {
		return vals[0], false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return vals[0], o == h.origin || o == weborigin.Of(scheme+"://"+r.Host)
}
