package mcptools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The audit log (--audit-log): two JSON lines per tool call — "started",
// written before the call runs, and its outcome — with who called what on
// which session, how it ended, how long it took and what it cost. It fails
// closed: a call whose "started" line cannot be written is refused, naming
// the audit log, and the server logs it at ERROR. Prompts appear as their
// size and SHA-256, never as text unless --audit-prompts; error texts have
// the call's string arguments cut out; tokens and keys never appear.

// auditEntry is one line.
type auditEntry struct {
	Time         string  `json:"time"`
	User         string  `json:"user"`
	Tool         string  `json:"tool,omitempty"`
	Session      string  `json:"session,omitempty"`
	Task         string  `json:"task,omitempty"`
	PromptBytes  int     `json:"promptBytes,omitempty"`
	PromptSHA256 string  `json:"promptSha256,omitempty"`
	Prompt       string  `json:"prompt,omitempty"`
	Outcome      string  `json:"outcome"`          // started, ok, tool_error, rpc_error, cancelled, task, task_completed, task_failed, task_cancelled; auth_failed, tokens_reloaded, tokens_reload_failed, revoked
	Remote       string  `json:"remote,omitempty"` // the remote address, for authentication events
	Error        string  `json:"error,omitempty"`
	DurationMs   int64   `json:"durationMs"`
	CostUSD      float64 `json:"costUsd,omitempty"`
}

// AuditLog writes the audit log's entries, one line each. Its methods are
// safe for concurrent use; a nil *AuditLog audits nothing.
type AuditLog struct {
	mu      sync.Mutex
	w       io.Writer
	name    string // names the log in errors: --audit-log PATH
	prompts bool
	log     *slog.Logger
	failing bool // the last write failed (logged once until one succeeds)
}

// NewAuditLog returns an audit log writing to w; name is what errors call
// it (the file's path); with prompts, prompts appear as text.
func NewAuditLog(w io.Writer, name string, prompts bool, log *slog.Logger) *AuditLog {
	if w == nil {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &AuditLog{w: w, name: name, prompts: prompts, log: log}
}

// write writes one entry; an error says the entry is not in the log (it
// is logged at ERROR).
func (a *AuditLog) write(e auditEntry) error {
	if a == nil {
		return nil
	}
	if e.User == "" {
		e.User = "local"
	}
	b, _ := json.Marshal(e)
	a.mu.Lock()
	defer a.mu.Unlock()
	_, err := a.w.Write(append(b, '\n'))
	switch {
	case err != nil:
		a.log.Error("writing the audit log failed: tool calls are refused until it can be written", "audit_log", a.name, "tool", e.Tool, "outcome", e.Outcome, "err", err)
		a.failing = true
		return fmt.Errorf("the audit log (--audit-log %s) cannot be written: %v", a.name, err)
	case a.failing:
		a.log.Info("the audit log is written again", "audit_log", a.name)
		a.failing = false
	}
	return nil
}

// Auth audits an authentication event of the HTTP transport (see
// AuthEvent).
func (a *AuditLog) Auth(ev AuthEvent) {
	_ = a.write(auditEntry{Time: time.Now().UTC().Format(time.RFC3339Nano), User: ev.User, Outcome: ev.Kind, Remote: ev.Remote, Error: ev.Reason})
}

// callArgs are what the audit log reads of a call's arguments.
type callArgs struct {
	SessionID string `json:"sessionId"`
	Prompt    string `json:"prompt"`
}

// entry is the entry of a tools/call as it starts.
func (a *AuditLog) entry(ctx context.Context, req *mcp.CallToolRequest, start time.Time) auditEntry {
	var args callArgs
	_ = json.Unmarshal(req.Params.Arguments, &args)
	e := auditEntry{Time: start.UTC().Format(time.RFC3339Nano), User: userOf(ctx), Tool: req.Params.Name, Session: args.SessionID, Outcome: "started"}
	if args.Prompt != "" {
		sum := sha256.Sum256([]byte(args.Prompt))
		e.PromptBytes, e.PromptSHA256 = len(args.Prompt), hex.EncodeToString(sum[:])
		if a.prompts {
			e.Prompt = args.Prompt
		}
	}
	return e
}

// started audits a tools/call before it runs and returns its entry, for
// call; an error refuses the call.
func (a *AuditLog) started(ctx context.Context, req *mcp.CallToolRequest, start time.Time) (auditEntry, error) {
	if a == nil {
		return auditEntry{}, nil
	}
	e := a.entry(ctx, req, start)
	return e, a.write(e)
}

// call audits the outcome of a tools/call whose started entry is e (its
// arguments are not read, nor its prompt hashed, again). Any result is read
// safely: a typed nil (an unknown tool's) is no result.
func (a *AuditLog) call(ctx context.Context, req *mcp.CallToolRequest, e auditEntry, start time.Time, res mcp.Result, err error) {
	if a == nil {
		return
	}
	e.DurationMs, e.Outcome = time.Since(start).Milliseconds(), "ok"
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
	if ctx.Err() != nil && e.Outcome != "task" {
		e.Outcome = "cancelled"
	}
	e.Error = redact(e.Error, req.Params.Arguments)
	_ = a.write(e)
}

// Argument-decoding errors quote the values they could not take: the SDK's
// schema validation ("type: map[text:…] has type"), encoding/json's
// ("cannot unmarshal \"…\" into") and checkArgs' (`got the string "…"`,
// `"…" is not one of`, `put it in a list: […]`, strings in Go's quotes).
var (
	quotedValueRE  = regexp.MustCompile(`(type: ).*?( has type)`)
	unmarshalRE    = regexp.MustCompile(`(cannot unmarshal ).*?( into )`)
	argStringRE    = regexp.MustCompile(`(got the string |put it in a list: \[)"(?:[^"\\]|\\.)*"()`)
	argEnumRE      = regexp.MustCompile(`(: )"(?:[^"\\]|\\.)*"( is not one of)`)
	valueRedaction = "${1}[redacted]${2}"
)

// redact cuts the call's string arguments (a prompt, a system prompt)
// out of an error text, which may quote them (argument validation does),
// and keeps it short.
func redact(text string, args json.RawMessage) string {
	if text == "" {
		return ""
	}
	text = quotedValueRE.ReplaceAllString(text, valueRedaction)
	text = unmarshalRE.ReplaceAllString(text, valueRedaction)
	text = argStringRE.ReplaceAllString(text, valueRedaction)
	text = argEnumRE.ReplaceAllString(text, valueRedaction)
	var v any
	_ = json.Unmarshal(args, &v)
	var strs []string
	var walk func(any)
	walk = func(x any) {
		switch y := x.(type) {
		case string:
			if len(y) >= 4 {
				strs = append(strs, y)
			}
		case []any:
			for _, e := range y {
				walk(e)
			}
		case map[string]any:
			for _, e := range y {
				walk(e)
			}
		}
	}
	walk(v)
	slices.SortFunc(strs, func(a, b string) int { return len(b) - len(a) })
	for _, s := range strs {
		text = strings.ReplaceAll(text, s, "[redacted]")
		if q, err := json.Marshal(s); err == nil {
			text = strings.ReplaceAll(text, strings.Trim(string(q), `"`), "[redacted]")
		}
	}
	return textcut.Cut(text, 300)
}

// DashboardAction audits an action taken on the dashboard, as a tool
// call is: outcome "started" before it runs (an error refuses it), then
// ok or error. Its tool is "ui:" and the action. It implements
// dashboard.Auditor.
func (a *AuditLog) DashboardAction(user, action, session string, start time.Time, outcome, errText string) error {
	if a == nil {
		return nil
	}
	e := auditEntry{Time: start.UTC().Format(time.RFC3339Nano), User: user, Tool: "ui:" + action, Session: session, Outcome: outcome,
		Error: textcut.Cut(errText, 300)}
	if outcome != "started" {
		e.DurationMs = time.Since(start).Milliseconds()
	}
	return a.write(e)
}

// taskEnded audits the end of a task.
func (a *AuditLog) taskEnded(t *task) {
	if a == nil {
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
	_ = a.write(e)
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
