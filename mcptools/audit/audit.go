// Package audit is the audit log (--audit-log): two JSON lines per tool
// call — "started", written before the call runs, and its outcome — with
// who called what on which session, how it ended, how long it took and what
// it cost; dashboard actions and authentication events alike. It fails
// closed: a call whose "started" line cannot be written is refused, naming
// the audit log, and the server logs it at ERROR. Prompts appear as their
// size and SHA-256, never as text unless --audit-prompts; error texts have
// the call's string arguments cut out; tokens and keys never appear.
//
// It knows entries and their redaction, nothing of MCP results, tasks or
// sessions: the server fills in an outcome and hands it over.
package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
)

// Entry is one line.
type Entry struct {
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

// Log writes the audit log's entries, one line each. Its methods are safe
// for concurrent use; a nil *Log audits nothing.
type Log struct {
	mu      sync.Mutex
	w       io.Writer
	name    string // names the log in errors: --audit-log PATH
	prompts bool
	log     *slog.Logger
	failing bool // the last write failed (logged once until one succeeds)
}

// Options configure New.
type Options struct {
	// Prompts writes prompts as text (--audit-prompts), not only their
	// size and SHA-256.
	Prompts bool
	// Log gets the failures to write (once until a write succeeds).
	Log *slog.Logger
}

// New returns an audit log writing to w (nil for none); name is what
// errors call it (the file's path).
func New(w io.Writer, name string, opts Options) *Log {
	if w == nil {
		return nil
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Log{w: w, name: name, prompts: opts.Prompts, log: log}
}

// Write writes one entry; an error says the entry is not in the log (it
// is logged at ERROR).
func (a *Log) Write(e Entry) error {
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

// Now is the time of an entry written now.
func Now() string { return Stamp(time.Now()) }

// Stamp is the time of an entry at t.
func Stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Auth audits an authentication event of the HTTP transport: kind is its
// outcome (auth_failed, tokens_reloaded, …).
func (a *Log) Auth(user, kind, remote, reason string) {
	_ = a.Write(Entry{Time: Now(), User: user, Outcome: kind, Remote: remote, Error: reason})
}

// callArgs are what the audit log reads of a call's arguments.
type callArgs struct {
	SessionID string `json:"sessionId"`
	Prompt    string `json:"prompt"`
}

// Started audits a tool call by user before it runs and returns its entry,
// for Finish; an error refuses the call.
func (a *Log) Started(user, tool string, args json.RawMessage, start time.Time) (Entry, error) {
	if a == nil {
		return Entry{}, nil
	}
	var ca callArgs
	_ = json.Unmarshal(args, &ca)
	e := Entry{Time: Stamp(start), User: user, Tool: tool, Session: ca.SessionID, Outcome: "started"}
	if ca.Prompt != "" {
		sum := sha256.Sum256([]byte(ca.Prompt))
		e.PromptBytes, e.PromptSHA256 = len(ca.Prompt), hex.EncodeToString(sum[:])
		if a.prompts {
			e.Prompt = ca.Prompt
		}
	}
	return e, a.Write(e)
}

// Finish audits the outcome of a call whose started entry was e, with
// its outcome, error, task and cost filled in by the caller: the duration
// is taken from start, and the call's string arguments are cut out of the
// error.
func (a *Log) Finish(e Entry, args json.RawMessage, start time.Time) {
	if a == nil {
		return
	}
	e.DurationMs = time.Since(start).Milliseconds()
	e.Error = redact(e.Error, args)
	_ = a.Write(e)
}

// Argument-decoding errors quote the values they could not take: the SDK's
// schema validation ("type: map[text:…] has type"), encoding/json's
// ("cannot unmarshal \"…\" into") and toolargs.Check's (`got the string "…"`,
// `"…" is not one of`, `put it in a list: […]`, strings in Go's quotes).
var (
	quotedValueRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(type: ).*?( has type)`) })
	unmarshalRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(cannot unmarshal ).*?( into )`) })
	argStringRE   = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(got the string |put it in a list: \[)"(?:[^"\\]|\\.)*"()`)
	})
	argEnumRE      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(: )"(?:[^"\\]|\\.)*"( is not one of)`) })
	valueRedaction = "${1}[redacted]${2}"
)

// redact cuts the call's string arguments (a prompt, a system prompt)
// out of an error text, which may quote them (argument validation does),
// and keeps it short.
func redact(text string, args json.RawMessage) string {
	if text == "" {
		return ""
	}
	text = quotedValueRE().ReplaceAllString(text, valueRedaction)
	text = unmarshalRE().ReplaceAllString(text, valueRedaction)
	text = argStringRE().ReplaceAllString(text, valueRedaction)
	text = argEnumRE().ReplaceAllString(text, valueRedaction)
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
func (a *Log) DashboardAction(user, action, session string, start time.Time, outcome, errText string) error {
	if a == nil {
		return nil
	}
	e := Entry{Time: Stamp(start), User: user, Tool: "ui:" + action, Session: session, Outcome: outcome,
		Error: textcut.Cut(errText, 300)}
	if outcome != "started" {
		e.DurationMs = time.Since(start).Milliseconds()
	}
	return a.Write(e)
}
