package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/audit"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/dashboard"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/httpserve"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// TokenEnv holds one bearer token (the token itself) for user "default".
const TokenEnv = "CLAUDE_AGENT_MCP_TOKEN"

// checkHTTP checks the --http flags before anything is served: a
// non-loopback address needs tokens.
func (c *config) checkHTTP() error {
	host, _, err := net.SplitHostPort(c.http)
	if err != nil {
		return fmt.Errorf("invalid --http %q: use HOST:PORT, such as 127.0.0.1:8787", c.http)
	}
	if c.tokensFile == "" && os.Getenv(TokenEnv) == "" && c.oauthIssuer == "" && !loopback(host) {
		return fmt.Errorf("--http %s listens beyond this machine without authentication: give --tokens-file, %s or --oauth-issuer, or listen on 127.0.0.1", c.http, TokenEnv)
	}
	if c.tokensFile != "" || os.Getenv(TokenEnv) != "" {
		if _, err := httpserve.LoadTokens(c.tokensFile, os.Getenv(TokenEnv)); err != nil {
			return err
		}
	}
	return nil
}

// oauth reads the discovery document and keys of --oauth-issuer (nil
// without it), giving up after 30 s.
func (c *config) oauth(ctx context.Context, st *settings) (*httpserve.OAuth, error) {
	if c.oauthIssuer == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	base := strings.TrimRight(c.publicURL, "/")
	return httpserve.NewOAuth(ctx, httpserve.OAuthOptions{Issuer: c.oauthIssuer, Audiences: []string{base, base + "/mcp"},
		UserClaim: c.oauthUserClaim, ScopeClasses: st.oauthScopes})
}

// checkOAuth checks the --oauth-* flags; it returns the classes of each
// scope (nil without --oauth-scope-classes).
func (c *config) checkOAuth(k *checks, allow []string) map[string][]string {
	if c.oauthIssuer == "" {
		if c.oauthScopeClasses != "" || c.oauthUserClaim != "sub" {
			k.add(errors.New("--oauth-scope-classes and --oauth-user-claim need --oauth-issuer"))
		}
		return nil
	}
	k.add(httpserve.CheckIssuerURL(c.oauthIssuer))
	if c.publicURL == "" {
		k.add(errors.New("--oauth-issuer needs --public-url: the URL clients reach this server at, which a token's audience must name"))
	} else if u, err := url.Parse(c.publicURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		k.bad("public-url", c.publicURL, "use an absolute URL such as https://agents.example.com")
	}
	if strings.TrimSpace(c.oauthUserClaim) == "" {
		k.bad("oauth-user-claim", `""`, "name a claim such as sub, email or preferred_username")
	}
	if c.oauthScopeClasses == "" {
		return nil
	}
	scopes := map[string][]string{}
	for _, entry := range splitList(c.oauthScopeClasses, ";") {
		scope, classes, ok := strings.Cut(entry, "=")
		scope = strings.TrimSpace(scope)
		if !ok || scope == "" || strings.ContainsAny(scope, " \t") {
			k.bad("oauth-scope-classes", entry, "use scope=class,class;scope=class, such as agents:files=reads-files;agents:run=runs-programs,reads-files")
			continue
		}
		if _, dup := scopes[scope]; dup {
			k.bad("oauth-scope-classes", entry, "name each scope once")
		}
		scopes[scope] = []string{}
		for _, class := range splitList(classes, ",") {
			switch {
			case !slices.Contains(sessions.HTTPAllowNames(), class):
				k.bad("oauth-scope-classes", class, "use "+strings.Join(sessions.HTTPAllowNames(), ", "))
			case !slices.Contains(allow, class):
				k.add(fmt.Errorf("--oauth-scope-classes gives scope %s the class %s, which --http-allow does not allow: a scope never grants beyond --http-allow; add %s to --http-allow, or leave it out of the scope", scope, class, class))
			}
			scopes[scope] = append(scopes[scope], class)
		}
	}
	return scopes
}

// loopback reports whether host names this machine only.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveHTTP serves srv over streamable HTTP until ctx ends, then stops
// every session (interrupting running turns) and the HTTP server.
func serveHTTP(ctx context.Context, c *config, st *settings, srv *mcp.Server, mgr *sessions.Manager, audit *audit.Log, dash *dashboard.Dashboard,
	om *operatorMetrics, logger *slog.Logger) error {
	var tokens *httpserve.Tokens
	var hup chan os.Signal
	if c.tokensFile != "" || os.Getenv(TokenEnv) != "" {
		var err error
		if tokens, err = httpserve.LoadTokens(c.tokensFile, os.Getenv(TokenEnv)); err != nil {
			return err
		}
		if tokens.Users() == 0 {
			logger.Warn("--tokens-file names no user: every request gets 401 until it names one and is reloaded (SIGHUP)")
		}
	}
	if tokens != nil || c.metricsTokensFile != "" {
		hup = make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
	}
	oauth, err := c.oauth(ctx, st)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.http)
	if err != nil {
		return fmt.Errorf("listening on --http %s: %w", c.http, err)
	}
	base := c.publicURL
	if base == "" {
		base = "http://" + ln.Addr().String()
	}
	handler := httpserve.NewHTTPHandler(srv, httpserve.HTTPOptions{Tokens: tokens, OAuth: oauth, BaseURL: base, Logger: logger, Manager: mgr,
		MaxBodyBytes: int64(c.maxFrameBytes), MaxSessions: c.httpMaxSessions, SessionIdle: c.httpSessionIdle, OnAuthEvent: httpserve.AuditAuth(audit),
		Dashboard: dash})
	if hup != nil {
		// A reload revokes the users it removed: it waits for their calls
		// and turns to end, up to a minute.
		go func() {
			for {
				select {
				case <-hup:
					om.reload() // --metrics-tokens-file
					rctx, cancel := context.WithTimeout(ctx, time.Minute)
					_ = handler.ReloadTokens(rctx) // logged
					cancel()
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	hs := handler.Server()
	hs.Handler = om.route(hs.Handler) // /metrics behind --metrics-tokens-file
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	logger.Info("claude-agent-mcp serving over HTTP", "url", base+"/mcp", "auth", tokens != nil || oauth != nil, "oauth_issuer", c.oauthIssuer, "version", versionString(), "pid", os.Getpid())
	if dash != nil {
		logger.Info("dashboard (sign in with a bearer token)", "url", dash.URL())
	}
	select {
	case err = <-served:
	case <-ctx.Done():
		logger.Info("signal received; stopping")
	}
	start := time.Now()
	mgr.Shutdown() // interrupts running turns: their calls return
	logger.Info("all sessions stopped", "took", time.Since(start).Round(time.Millisecond))
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := hs.Shutdown(sctx); serr != nil {
		logger.Warn("HTTP server did not stop in time", "err", serr)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
