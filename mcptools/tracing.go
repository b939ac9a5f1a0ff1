package mcptools

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/tracing"
)

// A tools/call's span (package tracing; nothing while tracing is off): it
// continues the caller's trace when the call carries W3C trace context in
// its _meta (traceparent, tracestate) or, over HTTP, a traceparent header.
// The sessions' spans (queue wait, process start, the turn and its
// permission waits, steers and store write) are its descendants.

// traceCall starts the span of a tools/call: "tools/call TOOL", with the
// tool, the user over HTTP and the session the arguments name.
func traceCall(ctx context.Context, req *mcp.CallToolRequest) (context.Context, tracing.Span) {
	if !tracing.On() {
		return ctx, tracing.Span{}
	}
	var header map[string][]string
	if ex := req.GetExtra(); ex != nil {
		header = ex.Header
	}
	ctx = tracing.Extract(ctx, req.Params.GetMeta(), header)
	ctx, sp := tracing.StartServer(ctx, "tools/call "+req.Params.Name)
	sp.Str("mcp.method.name", "tools/call")
	sp.Str("gen_ai.tool.name", req.Params.Name)
	if u := userOf(ctx); u != "" {
		sp.Str("user.id", u)
	}
	return ctx, sp
}

// endCall ends a tools/call's span with its outcome: the session and cost
// its result names; a tool error or a JSON-RPC error fails it.
func endCall(sp tracing.Span, res mcp.Result, err error) {
	if !sp.On() {
		return
	}
	r, _ := res.(*mcp.CallToolResult)
	if r != nil && r.StructuredContent != nil {
		cost, id := costAndSession(r.StructuredContent)
		if id != "" {
			sp.Str("session.id", id)
		}
		if cost > 0 {
			sp.Float("claude.cost_usd", cost)
		}
	}
	switch {
	case err != nil:
		sp.Fail(err.Error())
	case r != nil && r.IsError:
		why := "tool error"
		if len(r.Content) > 0 {
			if t, ok := r.Content[0].(*mcp.TextContent); ok {
				why = t.Text
			}
		}
		sp.Fail(why)
	}
	sp.End()
}
