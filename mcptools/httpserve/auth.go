package httpserve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/audit"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/dashboard"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// Failed authentication and revocation over HTTP.

// authFailed logs and reports (OnAuthEvent: the audit log) a failed
// authentication — at most once a second per remote host, with the count
// of those not logged, so that nobody without a token can flood the logs
// (and fill the audit log's disk, which would refuse every call). The token
// is never logged.
func (h *HTTPHandler) authFailed(r *http.Request, reason string) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ok, missed := h.authLog.allow(host, time.Now()); ok {
		h.log.Warn("HTTP authentication failed", "remote", r.RemoteAddr, "reason", reason, "path", r.URL.Path, "unlogged_failures", missed)
		if missed > 0 {
			reason = fmt.Sprintf("%s (and %d earlier failures from this host not reported)", reason, missed)
		}
		h.event(AuthEvent{Kind: AuthFailed, Remote: r.RemoteAddr, Reason: reason})
	}
}

func (h *HTTPHandler) event(ev AuthEvent) {
	if h.o.OnAuthEvent != nil {
		h.o.OnAuthEvent(ev)
	}
}

// authLimiter allows a log line per remote host per second.
type authLimiter struct {
	mu sync.Mutex
	by map[string]*authRemote
}

type authRemote struct {
	last   time.Time // of the last line logged
	missed int       // failures since, not logged
}

// allow reports whether a failure from host at now may be logged, and how
// many failures of host since its last line were not. Past 4096 hosts, the
// quiet ones are forgotten (with the count of theirs not logged), or all of
// them if none is quiet.
func (l *authLimiter) allow(host string, now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.by[host]
	if e != nil && now.Sub(e.last) < time.Second {
		e.missed++
		return false, 0
	}
	if l.by == nil || len(l.by) >= 4096 {
		by := map[string]*authRemote{}
		for k, v := range l.by {
			if now.Sub(v.last) < time.Second {
				by[k] = v
			}
		}
		if len(by) >= 4096 { // that many hosts within a second: start over
			clear(by)
		}
		l.by = by
	}
	missed := 0
	if e != nil {
		missed = e.missed
	}
	l.by[host] = &authRemote{last: now}
	return true, missed
}

// ReloadTokens reloads the tokens file (on SIGHUP) and revokes the users it
// no longer names (see Revoke). On an error (logged and reported) the
// tokens stay as they were. A file without users is valid, with a warning:
// every request gets 401 until a reload adds one.
func (h *HTTPHandler) ReloadTokens(ctx context.Context) error {
	if h.o.Tokens == nil {
		return nil
	}
	removed, err := h.o.Tokens.Reload()
	if err != nil {
		h.log.Error("reloading --tokens-file; keeping the tokens as they were", "err", err)
		h.event(AuthEvent{Kind: TokensReloadFailed, Reason: err.Error()})
		return err
	}
	n := h.o.Tokens.Users()
	h.log.Info("reloaded --tokens-file", "users", n, "removed", len(removed))
	if n == 0 {
		h.log.Warn("no user has a token: every request gets 401 until --tokens-file names one and is reloaded (SIGHUP)")
	}
	h.event(AuthEvent{Kind: TokensReloaded, Reason: fmt.Sprintf("%d users, %d removed", n, len(removed))})
	h.Revoke(ctx, removed...)
	return nil
}

// Revoke ends what users have running — for users whose tokens are gone,
// whose new requests get 401 already: their HTTP requests in progress are
// cut (the calls end with an error), their MCP calls cancelled, their
// stateful MCP sessions closed (their Mcp-Session-Id is then unknown), and
// the running turns of their sessions interrupted (their tasks with them).
// Their sessions stay, for them to resume if they come back. It waits for
// all that until ctx ends.
func (h *HTTPHandler) Revoke(ctx context.Context, users ...string) {
	if len(users) == 0 {
		return
	}
	h.o.Dashboard.Revoke(users)
	type tally struct{ requests, calls, mcpSessions, turns int }
	counts := map[string]*tally{}
	for _, u := range users {
		counts[u] = &tally{}
	}
	var requests, calls []context.CancelCauseFunc
	closing := map[string]bool{}
	h.mu.Lock()
	for _, u := range users {
		for c := range h.live[u] {
			if c.call {
				calls = append(calls, c.cancel)
				counts[u].calls++
			} else {
				requests = append(requests, c.cancel)
				counts[u].requests++
			}
		}
	}
	for id, u := range h.mcpSess {
		if t := counts[u]; t != nil {
			closing[id] = true
			delete(h.mcpSess, id)
			t.mcpSessions++
		}
	}
	h.mu.Unlock()
	// The requests first: their clients get no answer a cancelled call
	// might still give.
	for _, cancel := range append(requests, calls...) {
		cancel(errRevoked)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex // counts' turns
	// Close waits for the session's calls, cancelled above.
	h.closeSessions(&wg, closing)
	if h.o.Manager != nil {
		for _, s := range h.o.Manager.List() {
			t := counts[s.Info().Owner]
			if t == nil {
				continue
			}
			wg.Go(func() {
				if running, _ := s.Interrupt(ctx); running {
					mu.Lock()
					t.turns++
					mu.Unlock()
				}
			})
		}
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		h.log.Warn("revoking: gave up waiting for the calls and turns to end", "err", ctx.Err())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, u := range users {
		t := counts[u]
		h.log.Warn("revoked a user removed from --tokens-file", "user", u, "requests_cut", t.requests, "calls_cancelled", t.calls,
			"mcp_sessions_closed", t.mcpSessions, "turns_interrupted", t.turns)
		h.event(AuthEvent{Kind: Revoked, User: u, Reason: fmt.Sprintf("removed from --tokens-file: %d requests cut, %d calls cancelled, %d MCP sessions closed, %d turns interrupted",
			t.requests, t.calls, t.mcpSessions, t.turns)})
	}
}

// closeSessions closes the server sessions whose ids are in ids, each on
// a goroutine of wg.
func (h *HTTPHandler) closeSessions(wg *sync.WaitGroup, ids map[string]bool) {
	if len(ids) == 0 {
		return
	}
	for ss := range h.srv.Sessions() {
		if ids[ss.ID()] {
			wg.Go(func() { _ = ss.Close() })
		}
	}
}

// track records c, an HTTP request or MCP call of user in progress.
func (h *HTTPHandler) track(user string, c *inflight) *inflight {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.live[user] == nil {
		h.live[user] = map[*inflight]struct{}{}
	}
	h.live[user][c] = struct{}{}
	return c
}

func (h *HTTPHandler) untrack(user string, c *inflight) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.live[user], c)
	if len(h.live[user]) == 0 {
		delete(h.live, user)
	}
}

// trackCalls is a receiving middleware: an MCP call of an HTTP user is
// cancelled when the user is revoked, and answers with an error. (A
// stateful session's calls outlive the HTTP request that carried them, and
// closing the session waits for them.)
func (h *HTTPHandler) trackCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ex := req.GetExtra()
		if ex == nil || ex.TokenInfo == nil {
			return next(ctx, method, req)
		}
		user := ex.TokenInfo.UserID
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		c := h.track(user, &inflight{cancel: cancel, call: true})
		defer h.untrack(user, c)
		if h.revoked(ex.TokenInfo) { // since its request's token was checked
			return nil, fmt.Errorf("refusing %s: %w", method, errRevoked)
		}
		res, err := next(ctx, method, req)
		if errors.Is(context.Cause(ctx), errRevoked) {
			// Not the (interrupted) result: the SDK would send it on the
			// session's other stream.
			return nil, fmt.Errorf("%s cancelled: %w", method, errRevoked)
		}
		return res, err
	}
}

// dashboardTokens are the handler's bearer tokens as the dashboard signs
// in with them (dashboard.SignIns), or nil when it serves without tokens.
func (h *HTTPHandler) dashboardTokens() dashboard.SignIns {
	if h.o.Tokens == nil {
		return nil
	}
	return dashTokens{h}
}

// dashTokens implements dashboard.SignIns.
type dashTokens struct{ h *HTTPHandler }

func (t dashTokens) Verify(ctx context.Context, token string, r *http.Request) (string, *[]string, error) {
	info, err := t.h.o.Tokens.verify(ctx, token, r)
	if err != nil {
		return "", nil, err
	}
	var grant *[]string
	if g, ok := info.Extra[sessions.GrantKey].([]string); ok {
		grant = &g // the OAuth token's scopes: the sessions started on a page get no more
	}
	return info.UserID, grant, nil
}

func (t dashTokens) Holds(hash, user string) bool { return t.h.o.Tokens.hasHash(hash, user) }

func (t dashTokens) Failed(r *http.Request, reason string) { t.h.authFailed(r, reason) }

// AuditAuth is an HTTPOptions.OnAuthEvent that writes each
// authentication event to a (nil: none).
func AuditAuth(a *audit.Log) func(AuthEvent) {
	return func(ev AuthEvent) { a.Auth(ev.User, ev.Kind, ev.Remote, ev.Reason) }
}
