package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Serving over streamable HTTP: one URL (/mcp) for clients of every
// protocol era. A request of protocol 2026-07-28 or later (or
// server/discover) goes to a stateless handler, the only one of the SDK's
// that speaks that era (and so MCP tasks and input-required results); an
// older client goes to a stateful one, with its Mcp-Session-Id and
// server-to-client requests (elicitation). Both serve the same server, and
// the sessions live in the manager either way. Bearer tokens name the user
// (see Tokens); /healthz answers without one.

// HTTPOptions configure the HTTP handler.
type HTTPOptions struct {
	// Tokens authenticates requests; nil serves without authentication
	// (loopback only; see the command).
	Tokens *Tokens
	// BaseURL is the server's public URL (scheme and host), for the
	// protected resource metadata that a 401 points to.
	BaseURL string
	Logger  *slog.Logger
}

// NewHTTPHandler returns the HTTP handler of srv: /mcp, /healthz and the
// protected resource metadata.
func NewHTTPHandler(srv *mcp.Server, o HTTPOptions) http.Handler {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	get := func(*http.Request) *mcp.Server { return srv }
	sdkLog := slog.New(debugOnly{log.Handler()})
	stateful := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Logger: sdkLog, MaxRequestBodyBytes: DefaultMaxFrameBytes})
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true, Logger: sdkLog,
		MaxRequestBodyBytes: DefaultMaxFrameBytes, PropagateRequestCancellation: true})
	var endpoint http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		modern, err := modernRequest(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		if modern {
			stateless.ServeHTTP(w, r)
		} else {
			stateful.ServeHTTP(w, r)
		}
	})
	mux := http.NewServeMux()
	const metaPath = "/.well-known/oauth-protected-resource"
	if o.Tokens != nil {
		endpoint = auth.RequireBearerToken(o.Tokens.verify, &auth.RequireBearerTokenOptions{
			ResourceMetadataURL: strings.TrimRight(o.BaseURL, "/") + metaPath, AllowMissingExpiration: true,
		})(endpoint)
		mux.Handle(metaPath, auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource: strings.TrimRight(o.BaseURL, "/") + "/mcp", BearerMethodsSupported: []string{"header"},
			ResourceName: "claude-agent-mcp",
		}))
	}
	mux.Handle("/mcp", endpoint)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
	})
	return mux
}

// modernRequest tells whether r belongs to protocol 2026-07-28 or later:
// by its MCP-Protocol-Version header, or, for a POST without a session,
// by its body (server/discover, or the protocol version in _meta). The
// body is read and put back.
func modernRequest(r *http.Request) (bool, error) {
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
		return v >= "2026-07-28", nil
	}
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
		return false, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, DefaultMaxFrameBytes+1))
	if err != nil {
		return false, err
	}
	if len(body) > DefaultMaxFrameBytes {
		return false, fmt.Errorf("request body over %d bytes", DefaultMaxFrameBytes)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return false, nil // let the SDK answer it
	}
	if msg.Method == "server/discover" {
		return true, nil
	}
	v, _ := msg.Params.Meta[mcp.MetaKeyProtocolVersion].(string)
	return v >= "2026-07-28", nil
}

// userKey carries the calling user in a request's context.
type userKey struct{}

// withUser puts the user of req (its bearer token's) into ctx.
func withUser(ctx context.Context, req mcp.Request) context.Context {
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		return context.WithValue(ctx, userKey{}, ex.TokenInfo.UserID)
	}
	return ctx
}

// userOf is the calling user: the bearer token's over HTTP, "" on stdio.
func userOf(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}
