package mcptools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The audit log (--audit-log): a JSON line per tool call, with who called
// what on which session, how it ended, how long it took and what it cost.
// Prompts appear as their size and SHA-256, never as text unless
// --audit-prompts; tokens and keys never.

// auditEntry is one line.
type auditEntry struct {
	Time         string  `json:"time"`
	User         string  `json:"user"`
	Tool         string  `json:"tool"`
	Session      string  `json:"session,omitempty"`
	Task         string  `json:"task,omitempty"`
	PromptBytes  int     `json:"promptBytes,omitempty"`
	PromptSHA256 string  `json:"promptSha256,omitempty"`
	Prompt       string  `json:"prompt,omitempty"`
	Outcome      string  `json:"outcome"` // ok, tool_error, rpc_error, task, task_completed, task_failed, task_cancelled
	Error        string  `json:"error,omitempty"`
	DurationMs   int64   `json:"durationMs"`
	CostUSD      float64 `json:"costUsd,omitempty"`
}

// auditLog writes entries, one line each.
type auditLog struct {
	mu      sync.Mutex
	w       io.Writer
	prompts bool
}

func (a *auditLog) write(e auditEntry) {
	if a == nil || a.w == nil {
		return
	}
	if e.User == "" {
		e.User = "local"
	}
	b, _ := json.Marshal(e)
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = a.w.Write(append(b, '\n'))
}

// call audits one tools/call: the arguments' session and prompt, then the
// outcome.
func (a *auditLog) call(ctx context.Context, req *mcp.CallToolRequest, start time.Time, res mcp.Result, err error) {
	if a == nil || a.w == nil || req.Params == nil {
		return
	}
	var args struct {
		SessionID string `json:"sessionId"`
		Prompt    string `json:"prompt"`
	}
	_ = json.Unmarshal(req.Params.Arguments, &args)
	e := auditEntry{Time: start.UTC().Format(time.RFC3339Nano), User: userOf(ctx), Tool: req.Params.Name, Session: args.SessionID,
		DurationMs: time.Since(start).Milliseconds(), Outcome: "ok"}
	if args.Prompt != "" {
		sum := sha256.Sum256([]byte(args.Prompt))
		e.PromptBytes, e.PromptSHA256 = len(args.Prompt), hex.EncodeToString(sum[:])
		if a.prompts {
			e.Prompt = args.Prompt
		}
	}
	var rpcErr *jsonrpc.Error
	switch r := res.(type) {
	case nil:
	case *taskState:
		e.Outcome, e.Task = "task", r.TaskID
	case *mcp.CallToolResult:
		if r.IsError {
			e.Outcome, e.Error = "tool_error", firstLine(textOf(r))
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
	a.write(e)
}

// taskEnded audits the end of a task.
func (a *auditLog) taskEnded(t *task) {
	if a == nil || a.w == nil {
		return
	}
	st := t.state()
	e := auditEntry{Time: time.Now().UTC().Format(time.RFC3339Nano), User: t.owner, Tool: t.tool, Session: t.run.Session().ID, Task: t.id,
		Outcome: "task_" + st.Status, DurationMs: time.Since(t.created).Milliseconds()}
	if st.Result != nil {
		e.CostUSD, _ = costAndSession(st.Result.StructuredContent)
		if st.Result.IsError {
			e.Error = firstLine(textOf(st.Result))
		}
	}
	if st.Error != nil {
		e.Error = st.Error.Message
	}
	a.write(e)
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
