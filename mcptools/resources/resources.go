// Package resources serves the sessions as MCP resources: each session's
// transcript (its history as text, in pages), its last answer and, for a
// session with a worktree, its diff (in pages), under
// the URI templates Templates lists, for the sessions the caller may see
// (the same rule as the tools: over --http a user's own only). A client
// that subscribes to a session's transcript or answer gets
// notifications/resources/updated when a turn of that session ends.
//
// It knows the sessions' facade (Manager, Session, their history) and the
// mcp.Server, nothing of the tools: the core gives it the caller's user
// (Resources' User) and wires it into the server (Subscribe, Unsubscribe,
// Capabilities in the server's options; Attach; Middleware).
package resources

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// DefaultPageBytes is how much text a transcript page holds at most (about
// 10k tokens).
const DefaultPageBytes = 40000

// listPage is how many sessions one resources/list answer covers (two
// resources each).
const listPage = 50

// Capabilities is what the server declares of its resources: it takes
// subscriptions; it does not announce new sessions (list_changed), since
// that notification would go to every client, not only the session's
// owner.
func Capabilities() *mcp.ResourceCapabilities { return &mcp.ResourceCapabilities{Subscribe: true} }

// Resources serves the sessions of a manager as resources.
type Resources struct {
	mgr *sessions.Manager
	// user is the caller of a request: its bearer token's user over
	// --http, "" on stdio (the core's withUser put it in the context).
	user func(context.Context) string

	srv *mcp.Server

	mu      sync.Mutex
	pending []string        // sessions whose turn ended, to notify
	queued  map[string]bool // the ids in pending
	sending bool            // a goroutine sends the pending updates
}

// New returns the resources of mgr's sessions, user giving a request's
// user from its context.
func New(mgr *sessions.Manager, user func(context.Context) string) *Resources {
	return &Resources{mgr: mgr, user: user, queued: map[string]bool{}}
}

// Templates are the URI templates of a session's resources.
func Templates() []*mcp.ResourceTemplate {
	return []*mcp.ResourceTemplate{{
		URITemplate: prefix + "{sessionId}/transcript{?page}",
		Name:        "session-transcript",
		Title:       "Session transcript",
		Description: "A session's conversation as text: its prompts, answers and tool calls, oldest first, in pages of at most 40 KB. " +
			"Without page: the newest page; each page names the pages before and after it.",
		MIMEType: mimeType,
	}, {
		URITemplate: prefix + "{sessionId}/answer",
		Name:        "session-answer",
		Title:       "Session answer",
		Description: "A session's last answer: what Claude said last after the latest prompt.",
		MIMEType:    mimeType,
	}, {
		URITemplate: prefix + "{sessionId}/diff{?page}",
		Name:        "session-diff",
		Title:       "Session worktree diff",
		Description: "A worktree session's changes against the commit it branched from, uncommitted and untracked files included: " +
			"a summary of the files changed, then each file's patch, in pages of at most 40 KB (without page: the first).",
		MIMEType: mimeType,
	}}
}

// Attach adds the templates to srv, whose options have r's Subscribe and
// Unsubscribe, and has the manager tell r of every turn's end.
func (r *Resources) Attach(srv *mcp.Server) {
	r.srv = srv
	for _, t := range Templates() {
		srv.AddResourceTemplate(t, r.read)
	}
	r.mgr.OnTurnEnd(r.turnEnded)
}

// Middleware answers resources/list with the caller's sessions and refuses
// a malformed URI of ours in resources/read with a clear error; it runs
// inside the middleware that puts the user in the context.
func (r *Resources) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "resources/list":
			if lr, ok := req.(*mcp.ListResourcesRequest); ok {
				return r.list(ctx, lr, next)
			}
		case "resources/read":
			if rr, ok := req.(*mcp.ReadResourceRequest); ok && rr.Params != nil {
				if _, err := parse(rr.Params.URI); err != nil && err != errForeign {
					return nil, err
				}
			}
		}
		return next(ctx, method, req)
	}
}

// visible is the session id names when the caller may see it: another
// user's session is not found, exactly like one that does not exist.
func (r *Resources) visible(ctx context.Context, id string) (*sessions.Session, bool) {
	s, err := r.mgr.Get(id)
	if err != nil || s.Info().Owner != r.user(ctx) {
		return nil, false
	}
	return s, true
}

// private is the cache scope of what a user reads of their sessions (a
// list, a transcript, an answer): for that user's client alone.
const private = "private"

// list answers resources/list: a transcript and an answer for each session
// the caller may see, oldest session first, listPage sessions a page.
func (r *Resources) list(ctx context.Context, req *mcp.ListResourcesRequest, next mcp.MethodHandler) (mcp.Result, error) {
	from := 0
	if req.Params != nil && req.Params.Cursor != "" {
		n, err := strconv.Atoi(req.Params.Cursor)
		if err != nil || n < 0 {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid cursor %q: pass the nextCursor of an earlier resources/list answer", req.Params.Cursor)}
		}
		from = n
	}
	// The SDK's own answer (none of its own resources) carries what the
	// protocol adds to a list; its cursor is ours, not the SDK's.
	sdkReq := &mcp.ListResourcesRequest{Session: req.Session, Extra: req.Extra, Params: &mcp.ListResourcesParams{}}
	if req.Params != nil {
		sdkReq.Params.Meta = req.Params.Meta
	}
	res, err := next(ctx, "resources/list", sdkReq)
	if err != nil {
		return nil, err
	}
	out, ok := res.(*mcp.ListResourcesResult)
	if !ok {
		return res, nil
	}
	user := r.user(ctx)
	var mine []*sessions.Session
	for _, s := range r.mgr.List() {
		if s.Info().Owner == user {
			mine = append(mine, s)
		}
	}
	// Each user's own: no client or intermediary may cache it for another.
	out.CacheScope = private
	out.Resources, out.NextCursor = []*mcp.Resource{}, ""
	for i := from; i < len(mine) && i < from+listPage; i++ {
		out.Resources = append(out.Resources, listed(mine[i])...)
	}
	if from+listPage < len(mine) {
		out.NextCursor = strconv.Itoa(from + listPage)
	}
	return out, nil
}

// listed is a session's resources in resources/list: its transcript and
// answer, and with a worktree its diff.
func listed(s *sessions.Session) []*mcp.Resource {
	i := s.Info()
	name := i.Name
	if name == "" {
		name = s.ID
	}
	out := []*mcp.Resource{{
		URI: transcriptURI(s.ID), Name: name, Title: name + ": transcript", MIMEType: mimeType,
		Description: fmt.Sprintf("The conversation of session %s (in %s): prompts, answers and tool calls; the newest page, ?page=N for the others.", s.ID, i.Cwd),
	}, {
		URI: answerURI(s.ID), Name: name, Title: name + ": last answer", MIMEType: mimeType,
		Description: fmt.Sprintf("The last answer of session %s (in %s).", s.ID, i.Cwd),
	}}
	if w := i.Worktree; w != nil {
		out = append(out, &mcp.Resource{
			URI: diffURI(s.ID), Name: name, Title: name + ": diff", MIMEType: mimeType,
			Description: fmt.Sprintf("The changes of session %s in its worktree (branch %s): files changed, then patches; ?page=N.", s.ID, w.Branch),
		})
	}
	return out
}

// read answers resources/read of a session's resource.
func (r *Resources) read(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	ref, err := parse(uri)
	if err == errForeign {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, err
	}
	s, ok := r.visible(ctx, ref.session)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	var text string
	switch {
	case ref.answer:
		text = answerText(s)
	case ref.diff:
		text, err = diffPage(ctx, s, ref.page, DefaultPageBytes)
	default:
		text, err = transcriptPage(s, ref.page, DefaultPageBytes)
	}
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Cacheable: mcp.Cacheable{CacheScope: private}, Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mimeType, Text: text}}}, nil
}

// Subscribe admits a subscription (mcp.ServerOptions.SubscribeHandler): to
// the transcript or the answer of a session the caller may see; another
// user's is not found. A page's URI is refused: the transcript's covers
// every page.
func (r *Resources) Subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	ref, err := parse(uri)
	switch {
	case err == errForeign:
		return mcp.ResourceNotFoundError(uri)
	case err != nil:
		return err
	case ref.page != 0:
		whole := transcriptURI(ref.session)
		if ref.diff {
			whole = diffURI(ref.session)
		}
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("subscribe to %s instead of one page: its update covers every page", whole)}
	}
	if _, ok := r.visible(ctx, ref.session); !ok {
		return mcp.ResourceNotFoundError(uri)
	}
	return nil
}

// Unsubscribe ends a subscription (mcp.ServerOptions.UnsubscribeHandler):
// nothing of ours to forget, the server keeps the subscriptions.
func (r *Resources) Unsubscribe(context.Context, *mcp.UnsubscribeRequest) error { return nil }

// turnEnded queues the updates of s's resources (sessions.Manager.OnTurnEnd):
// they are sent from a goroutine of their own, never from the session's.
func (r *Resources) turnEnded(s *sessions.Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.queued[s.ID] {
		r.queued[s.ID] = true
		r.pending = append(r.pending, s.ID)
	}
	if !r.sending && r.srv != nil {
		r.sending = true
		go r.send()
	}
}

// send tells the subscribers of each pending session's transcript and
// answer that they changed, until none is pending. The server sends an
// update only to the clients subscribed to its URI, whom Subscribe
// admitted as ones who may see the session.
func (r *Resources) send() {
	for {
		r.mu.Lock()
		if len(r.pending) == 0 {
			r.sending = false
			r.mu.Unlock()
			return
		}
		id := r.pending[0]
		r.pending = r.pending[1:]
		delete(r.queued, id)
		r.mu.Unlock()
		for _, uri := range []string{transcriptURI(id), answerURI(id), diffURI(id)} {
			_ = r.srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
		}
	}
}
