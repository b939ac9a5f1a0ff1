package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/audit"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/resulttext"
)

// What the audit log (package audit) is told of tool calls and tasks: the
// outcome of a call read from its result, and a task's end.

// auditStarted audits a tools/call before it runs; an error refuses it.
func (h *handlers) auditStarted(ctx context.Context, req *mcp.CallToolRequest, start time.Time) (audit.Entry, error) {
	return h.audit.Started(userOf(ctx), req.Params.Name, req.Params.Arguments, start)
}

// auditCall audits the outcome of a tools/call whose started entry is e
// (its arguments are not read, nor its prompt hashed, again). Any result
// is read safely: a typed nil (an unknown tool's) is no result.
func (h *handlers) auditCall(ctx context.Context, req *mcp.CallToolRequest, e audit.Entry, start time.Time, res mcp.Result, err error) {
	if h.audit == nil {
		return
	}
	e.Outcome = "ok"
	var rpcErr *jsonrpc.Error
	switch r := res.(type) {
	case *taskState:
		if r != nil {
			e.Outcome, e.Task = "task", r.TaskID
		}
	case *mcp.CallToolResult:
		if r == nil {
			break
		}
		if r.IsError {
			e.Outcome, e.Error = "tool_error", resulttext.FirstLine(resulttext.OfTool(r))
		}
		cost, session := costAndSession(r.StructuredContent)
		e.CostUSD = cost
		if e.Session == "" {
			e.Session = session
		}
	}
	if err != nil {
		e.Outcome, e.Error = "rpc_error", err.Error()
		if errors.As(err, &rpcErr) {
			e.Error = rpcErr.Message
		}
	}
	if ctx.Err() != nil && e.Outcome != "task" {
		e.Outcome = "cancelled"
	}
	h.audit.Finish(e, req.Params.Arguments, start)
}

// auditTaskEnded audits the end of a task.
func auditTaskEnded(a *audit.Log, t *task) {
	if a == nil {
		return
	}
	st := t.state()
	e := audit.Entry{Time: audit.Now(), User: t.owner, Tool: t.tool, Session: t.run.Session().ID, Task: t.id,
		Outcome: "task_" + st.Status, DurationMs: time.Since(t.created).Milliseconds()}
	if st.Result != nil {
		e.CostUSD, _ = costAndSession(st.Result.StructuredContent)
		if st.Result.IsError {
			e.Error = resulttext.FirstLine(resulttext.OfTool(st.Result))
		}
	}
	if st.Error != nil {
		e.Error = st.Error.Message
	}
	_ = a.Write(e)
}

// costAndSession reads a result's cost and session id from its structured
// content (a Go value or its JSON).
func costAndSession(sc any) (float64, string) {
	raw, ok := sc.(json.RawMessage)
	if !ok {
		raw, _ = json.Marshal(sc)
	}
	var out struct {
		SessionID string `json:"sessionId"`
		Metadata  struct {
			TotalCostUSD float64 `json:"totalCostUsd"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(raw, &out)
	return out.Metadata.TotalCostUSD, out.SessionID
}
