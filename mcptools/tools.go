// Package mcptools is the tool core: it exposes Claude Code sessions as MCP
// tools. It owns the built-in tools' definitions, schemas and policy
// classes, their handlers and the mapping of sessions errors to MCP
// results, the views of a query's run (the waiting call, claude_chat_wait,
// input-required results, MCP tasks, the run's tap), permission questions
// as elicitation, the caller's user, and the server's middleware (argument
// checks, the audit of calls, tasks).
//
// Agent files served as tools are files of it (agents.go, agentcall.go).
// Its other parts are packages it imports and that never import it:
// toolargs (arguments against a JSON schema), notify (a
// call's notifications), audit (the audit log), resources (the sessions'
// transcripts and answers as MCP resources) and dashboard (reaching the
// core through dashboard.Server); the transports, stdio and httpserve, serve
// the *mcp.Server NewServer returns. It must not know what is inside
// sessions beyond its facade (Manager, Session, Run and their types): not
// the policy's classes (the sessions' gate decides options), the
// store's format, the live processes; nor the transports' framing or
// the dashboard's pages.
package mcptools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/debuglog"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/audit"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/dashboard"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/resources"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/resulttext"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// Defaults of the tasks extension.
const (
	DefaultTaskAfter = 500 * time.Millisecond
	DefaultTaskTTL   = time.Hour
)

// DefaultMaxPromptBytes is the default cap on a prompt, well under the
// stdio frame limit.
const DefaultMaxPromptBytes = 8 << 20

//go:embed instructions.md
var instructions string

// dashboardInstructions are added to the instructions with a dashboard.
const dashboardInstructions = "\n\nA live web dashboard of the sessions is on: claude_session_list returns its link (dashboardUrl). When the person wants to watch or steer the sub-agents, give them that link.\n"

// Options configure the MCP server.
type Options struct {
	Version string
	Logger  *slog.Logger
	// MaxResultChars caps finalText (default 60000, under Claude Code's
	// 25k-token tool-result limit); longer text is cut with a marker that
	// names the transcript holding everything. Negative disables the cap.
	MaxResultChars int
	// DefaultWait is how long a query call waits before it returns status
	// running when the call gives no waitSeconds; 0 waits for the end.
	DefaultWait time.Duration
	// MaxPromptBytes caps a prompt (default DefaultMaxPromptBytes); a longer
	// one is refused as a tool error naming --max-prompt-bytes.
	MaxPromptBytes int
	// TaskAfter is how long a query call from a client that takes tasks
	// waits before it answers with a task (default DefaultTaskAfter).
	TaskAfter time.Duration
	// TaskTTL is how long a task's result is kept (default DefaultTaskTTL).
	TaskTTL time.Duration
	// NoTasks turns the tasks extension off.
	NoTasks bool
	// Audit, when set, gets two JSON lines per tool call (see audit.go).
	Audit *audit.Log
	// HeartbeatInterval is how often a running query sends a progress
	// heartbeat when the call has a progress token; default 15 s.
	HeartbeatInterval time.Duration
	// Agents, when set, serves agent definitions as tools
	// (agents.go).
	Agents *Agents
	// Dashboard, when set, is the dashboard of the sessions (--ui): it
	// follows every run, may answer permission questions, and its link is
	// claude_session_list's dashboardUrl.
	Dashboard *dashboard.Dashboard
}

// NewServer returns an MCP server whose tools drive mgr's sessions.
func NewServer(mgr *sessions.Manager, opts Options) *mcp.Server {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = 15 * time.Second
	}
	if opts.MaxPromptBytes <= 0 {
		opts.MaxPromptBytes = DefaultMaxPromptBytes
	}
	if opts.MaxResultChars == 0 {
		opts.MaxResultChars = 60000
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	if opts.TaskAfter <= 0 {
		opts.TaskAfter = DefaultTaskAfter
	}
	if opts.TaskTTL <= 0 {
		opts.TaskTTL = DefaultTaskTTL
	}
	instr := instructions
	if opts.Agents != nil {
		var builtin []string
		for _, t := range Tools() {
			builtin = append(builtin, t.Name)
		}
		if opts.Agents.Start(builtin) {
			instr += agentInstructions
		}
	}
	if opts.Dashboard != nil {
		instr += dashboardInstructions
	}
	res := resources.New(mgr, userOf) // the sessions' transcripts and answers
	srv := mcp.NewServer(&mcp.Implementation{Name: "claude-agent-mcp", Title: "Claude Code sessions", Version: version},
		&mcp.ServerOptions{Instructions: instr, Logger: slog.New(debuglog.Handler(logger.Handler())),
			SubscribeHandler: res.Subscribe, UnsubscribeHandler: res.Unsubscribe,
			// The SDK answers prompts/list (with an empty list) whatever it
			// declares: declare what it answers.
			//lint:ignore SA1019 the logging capability serves clients of protocols before 2026-07-28
			Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Prompts: &mcp.PromptCapabilities{}, Resources: resources.Capabilities()}})
	res.Attach(srv)
	h := &handlers{mgr: mgr, log: logger, opts: opts, states: newStateSigner(), tasks: newTaskStore(opts.TaskTTL), inputs: map[string]*jsonschema.Schema{},
		audit: opts.Audit}
	for _, t := range h.tools() {
		t.add(srv)
		h.inputs[t.def.Name] = t.input
	}
	h.attachDashboard(opts.Dashboard)
	mgr.OnFollowUp(h.followUpStarted)
	if h.agents = opts.Agents; h.agents != nil {
		h.dynamicAction = func(name string) (string, bool) {
			if h.agents.Has(name) {
				return actionRun, true // an agent tool runs a session
			}
			return "", false
		}
		h.agents.Attach(srv, h)
	}
	srv.AddReceivingMiddleware(res.Middleware) // inside h.middleware, which puts the user in the context
	srv.AddReceivingMiddleware(h.middleware)
	if !opts.NoTasks {
		if err := h.addTaskMethods(srv); err != nil {
			panic(err) // the names are ours and not standard methods
		}
	}
	return srv
}

// session returns the open session id of the calling user: another user's
// session is not found, exactly like one that does not exist.
func (h *handlers) session(ctx context.Context, id string) (*sessions.Session, error) {
	s, err := h.mgr.Get(id)
	if err != nil {
		return nil, err
	}
	if s.Info().Owner != userOf(ctx) {
		return nil, sessions.NotFoundError(id)
	}
	return s, nil
}

// owned fills in the owner of a new session: the caller (over HTTP, the
// bearer token's user), and what their OAuth token grants. Everything
// else a caller may or may not choose is the policy gate's
// (sessions/gate.go).
func owned(ctx context.Context, o *sessions.CreateOptions) {
	o.Owner = userOf(ctx)
	o.Grant = grantOf(ctx)
}

// persisted is false (a pointer to it) when sessions should survive a
// restart but the store cannot be written; nil otherwise.
func (h *handlers) persisted() *bool {
	if h.mgr.PersistFailing() {
		return ptr(false)
	}
	return nil
}

type handlers struct {
	mgr  *sessions.Manager
	log  *slog.Logger
	opts Options

	states  *stateSigner // signs RequestState of input-required results
	tasks   *taskStore
	inputs  map[string]*jsonschema.Schema // input schemas, by tool (toolargs.Check)
	audit   *audit.Log
	actions map[string]string // the tools' classes (toolActions; tests change it)
	bursts  bursts            // the fan-out rule (middleware.go)
	// dynamicAction classifies tools added after NewServer (actions.go).
	dynamicAction func(name string) (string, bool)
	agents        *Agents // the agent tools, or nil
	dash          *dashboard.Dashboard
}

func (h *handlers) history(ctx context.Context, req *mcp.CallToolRequest, in HistoryInput) (*mcp.CallToolResult, HistoryOutput, error) {
	s, err := h.session(ctx, in.SessionID)
	if err != nil {
		return nil, HistoryOutput{}, toolError(err)
	}
	limit := in.Limit
	switch {
	case limit == 0:
		limit = 20
	case limit < 1 || limit > 200:
		return nil, HistoryOutput{}, fmt.Errorf("invalid limit %d: use 1 to 200", limit)
	}
	all := s.History()
	start := max(len(all)-limit, 0)
	if in.Cursor != "" {
		n, err := strconv.Atoi(in.Cursor)
		if err != nil || n < 0 || n > len(all) {
			return nil, HistoryOutput{}, fmt.Errorf("invalid cursor %q: pass a cursor from an earlier claude_session_history answer (this conversation has %d entries)", in.Cursor, len(all))
		}
		start = n
	}
	end := min(start+limit, len(all))
	out := HistoryOutput{SessionID: s.ID, Name: s.Info().Name, Entries: append([]history.Entry{}, all[start:end]...), Total: len(all), Cursor: strconv.Itoa(start)}
	h.capHistory(s, out.Entries)
	if start > 0 {
		out.OlderCursor = strconv.Itoa(max(start-limit, 0))
	}
	if end < len(all) {
		out.NewerCursor = strconv.Itoa(end)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Entries %d–%d of %d in session %s:\n", start+1, end, len(all), s.ID)
	prompt := promptsIn(all[:start]) // prompts are numbered from 1 (claude_session_rewind's prompt)
	for _, e := range out.Entries {
		switch e.Kind {
		case "prompt":
			prompt++
			fmt.Fprintf(&b, "> [prompt %d] %s\n", prompt, textcut.Cut(e.Text, 500))
		case "text":
			fmt.Fprintf(&b, "%s\n", textcut.Cut(e.Text, 1000))
		case "tool":
			status := ""
			if e.IsError {
				status = " (error)"
			}
			fmt.Fprintf(&b, "[%s %s]%s → %s\n", e.Tool, textcut.Cut(string(e.Input), 200), status, textcut.Cut(e.Result, 200))
		}
	}
	if out.OlderCursor != "" {
		fmt.Fprintf(&b, "(older entries: cursor %s)\n", out.OlderCursor)
	}
	return resulttext.Tool(b.String()), out, nil
}

func (h *handlers) create(ctx context.Context, req *mcp.CallToolRequest, in CreateInput) (*mcp.CallToolResult, CreateOutput, error) {
	opts := in.CreateOptions
	owned(ctx, &opts)
	s, err := h.mgr.Create(ctx, opts)
	if err != nil {
		return nil, CreateOutput{}, toolError(err)
	}
	info := s.Info()
	out := CreateOutput{SessionID: s.ID, ClaudeSessionID: info.ClaudeSessionID, Model: info.Model, Cwd: info.Cwd,
		PermissionMode: info.PermissionMode, Active: info.PID != 0, Persisted: h.persisted(), Worktree: s.WorktreeInfo(ctx)}
	text := fmt.Sprintf("Created session %s (claudeSessionId %s) in %s, model %s, permission mode %s.",
		out.SessionID, out.ClaudeSessionID, out.Cwd, resulttext.Model(out.Model), out.PermissionMode)
	if !out.Active {
		text += fmt.Sprintf(" No live claude process is free now (--max-live %d, all busy): it starts with its first query, which waits its turn.", h.mgr.Config().MaxLive)
	}
	if out.Worktree != nil && info.Worktree != nil && info.Worktree.Copied != nil {
		// What the worktree got when it was made is said here alone.
		wt, c := *out.Worktree, info.Worktree.Copied
		wt.Copied, out.Worktree = c, &wt
		text += fmt.Sprintf(" Its worktree got %d git-ignored file(s) that .worktreeinclude names", c.Count)
		if len(c.Skipped) > 0 {
			text += "; not copied: " + strings.Join(c.Skipped, "; ")
		}
		text += "."
	}
	if out.Worktree != nil && info.Worktree != nil && info.Worktree.Setup != nil {
		wt := *out.Worktree
		wt.Setup, out.Worktree = info.Worktree.Setup, &wt
		text += fmt.Sprintf(" The repository's WorktreeCreate hook made the worktree, at %s.", wt.Path)
	}
	return resulttext.Tool(text), out, nil
}

func (h *handlers) close(ctx context.Context, req *mcp.CallToolRequest, in SessionInput) (*mcp.CallToolResult, CloseOutput, error) {
	s, err := h.session(ctx, in.SessionID)
	if err != nil {
		return nil, CloseOutput{}, toolError(err)
	}
	if _, err := h.mgr.Close(in.SessionID); err != nil {
		return nil, CloseOutput{}, toolError(err)
	}
	n, _, _ := h.counts(ctx)
	out := CloseOutput{SessionID: in.SessionID, Closed: true, ActiveSessions: n, Worktree: s.WorktreeInfo(ctx)}
	text := fmt.Sprintf("Closed session %s; %d session(s) remain open.", in.SessionID, n)
	if w := out.Worktree; w != nil && w.Removed {
		text += " Its worktree had no changes and was removed."
	} else if w != nil {
		text += fmt.Sprintf(" Its worktree is kept, with %d changed file(s): %s on branch %s.", len(w.ChangedFiles), w.Path, w.Branch)
	}
	return resulttext.Tool(text), out, nil
}

func (h *handlers) query(ctx context.Context, req *mcp.CallToolRequest, in QueryInput) (*mcp.CallToolResult, QueryOutput, error) {
	return h.queryCall(ctx, req, in.Prompt, in.WaitSeconds, func(wait time.Duration) (*mcp.CallToolResult, QueryOutput, error) {
		return h.chatQuery(ctx, req, in, wait)
	})
}

func (h *handlers) chatQuery(ctx context.Context, req *mcp.CallToolRequest, in QueryInput, wait time.Duration) (*mcp.CallToolResult, QueryOutput, error) {
	s, err := h.session(ctx, in.SessionID)
	if err != nil {
		return nil, QueryOutput{}, toolError(err)
	}
	if err := agentOnly(s, "claude_chat_query"); err != nil {
		return nil, QueryOutput{}, err
	}
	images, err := s.LoadImages(in.Images)
	if err != nil {
		return nil, QueryOutput{}, err
	}
	return h.launch(ctx, req, s, in.Prompt, sessions.QueryOptions{IncludeThinking: in.IncludeThinking, CloseAfter: in.CloseAfter, Effort: in.Effort,
		Images: images, OnLimit: in.OnUsageLimit}, wait)
}

// queryCall is what every call that sends a prompt does first (the query,
// the direct query, an agent tool): it checks the prompt and the wait, and
// answers the retry of an input-required result (one carrying its
// requestState) by waiting on the run that asked; any other call is
// fresh's, given how long the call waits.
func (h *handlers) queryCall(ctx context.Context, req *mcp.CallToolRequest, prompt string, waitSeconds int,
	fresh func(wait time.Duration) (*mcp.CallToolResult, QueryOutput, error)) (*mcp.CallToolResult, QueryOutput, error) {
	wait, err := h.queryArgs(prompt, waitSeconds)
	if err != nil {
		return nil, QueryOutput{}, err
	}
	if req.Params.RequestState != "" {
		return h.retried(ctx, req, wait, true)
	}
	return fresh(wait)
}

// queryArgs checks what calls that send a prompt share and returns how
// long the call waits.
func (h *handlers) queryArgs(prompt string, waitSeconds int) (time.Duration, error) {
	if err := sessions.ValidatePrompt(prompt); err != nil {
		return 0, err
	}
	if len(prompt) > h.opts.MaxPromptBytes {
		return 0, fmt.Errorf("prompt is too large: %d bytes, and this server accepts at most %d (--max-prompt-bytes); put the material in a file in the session's directory and refer to it", len(prompt), h.opts.MaxPromptBytes)
	}
	return h.waitDuration(waitSeconds)
}

func (h *handlers) direct(ctx context.Context, req *mcp.CallToolRequest, in DirectInput) (*mcp.CallToolResult, QueryOutput, error) {
	return h.queryCall(ctx, req, in.Prompt, in.WaitSeconds, func(wait time.Duration) (*mcp.CallToolResult, QueryOutput, error) {
		return h.directQuery(ctx, req, in, wait)
	})
}

func (h *handlers) directQuery(ctx context.Context, req *mcp.CallToolRequest, in DirectInput, wait time.Duration) (*mcp.CallToolResult, QueryOutput, error) {
	opts := in.CreateOptions
	owned(ctx, &opts)
	opts.Temporary = true
	// The query starts the process (or takes a warm spare); the session
	// ends with its answer, and the spares are filled when its turn ends.
	s, images, err := h.mgr.OneShot(ctx, opts, in.Images)
	if err != nil {
		return nil, QueryOutput{}, toolError(err)
	}
	return h.launch(ctx, req, s, in.Prompt, sessions.QueryOptions{IncludeThinking: in.IncludeThinking, Images: images, OnLimit: in.OnUsageLimit}, wait)
}

// capText cuts an over-long final text, naming the transcript file that
// holds all of it.
func (h *handlers) capText(s *sessions.Session, r *turn.Result) {
	r.FinalText = h.capTo(r.FinalText, h.opts.MaxResultChars, s)
}

// capTo cuts text beyond max bytes (never a character), with a marker that
// names the transcript holding all of it; max < 0 never cuts.
func (h *handlers) capTo(text string, max int, s *sessions.Session) string {
	return h.capFrom(text, len(text), max, s)
}

// capFrom is capTo for a text that was full bytes long before the server
// cut it (the history in memory keeps a part of long entries).
func (h *handlers) capFrom(text string, full, limit int, s *sessions.Session) string {
	if limit < 0 || len(text) <= limit {
		return text
	}
	cut := textcut.Prefix(text, limit)
	return fmt.Sprintf("%s\n\n[… truncated: showing %d of %d characters. The full conversation is in the transcript %s]",
		cut, len(cut), max(full, len(text)), s.TranscriptPath())
}

// capHistory keeps a page of history within --max-result-chars: each
// entry's text and tool input gets an equal share (at least 500 bytes),
// cut with a marker naming the transcript.
func (h *handlers) capHistory(s *sessions.Session, entries []history.Entry) {
	if h.opts.MaxResultChars < 0 || len(entries) == 0 {
		return
	}
	share := max(h.opts.MaxResultChars/len(entries), 500)
	for i := range entries {
		e := &entries[i]
		e.Text = h.capFrom(e.Text, e.TextBytes, share, s)
		if len(e.Input) > share {
			// Cut JSON stays a JSON object: the head of the input, as text.
			e.Input, _ = json.Marshal(map[string]string{"truncated": h.capTo(string(e.Input), share, s)})
		}
	}
}

func queryOutput(sessionID string, r *turn.Result) QueryOutput {
	out := QueryOutput{
		FinalText:        r.FinalText,
		StructuredOutput: r.StructuredOutput,
		Thinking:         r.Thinking,
		ToolInvocations:  make([]turn.ToolInvocation, 0, len(r.ToolInvocations)),
		SessionID:        sessionID,
		ClaudeSessionID:  r.ClaudeSessionID,
		Interrupted:      r.Interrupted,
		Recovered:        r.Recovered,
		LimitedUntil:     resulttext.RFC3339(r.LimitedUntil),
		LimitNote:        r.LimitNote,
		Questions:        r.Questions,
		Metadata: Metadata{
			Usage: r.Usage, DurationMs: r.DurationMs, DurationAPIMs: r.DurationAPIMs, NumTurns: r.NumTurns,
			TotalCostUSD: r.CostUSD, Model: r.Model, StopReason: r.StopReason, Subtype: r.Subtype,
			TerminalReason: r.TerminalReason, IsError: r.IsError,
			PermissionDenials: append([]turn.PermissionDenial{}, r.PermissionDenials...),
		},
	}
	if r.IsError {
		out.Error = r.ErrorText
	}
	for _, t := range r.ToolInvocations {
		in := t.Input
		if len(in) == 0 {
			in = json.RawMessage("{}")
		}
		t.Input = in
		out.ToolInvocations = append(out.ToolInvocations, t)
	}
	return out
}

func (h *handlers) interrupt(ctx context.Context, req *mcp.CallToolRequest, in SessionInput) (*mcp.CallToolResult, InterruptOutput, error) {
	s, err := h.session(ctx, in.SessionID)
	if err != nil {
		return nil, InterruptOutput{}, toolError(err)
	}
	was, forced := s.Interrupt(ctx)
	msg := "No query was running in session " + s.ID + "."
	switch {
	case forced:
		msg = "Interrupted the running query of session " + s.ID + ", but claude did not acknowledge the interrupt in time, so its process was stopped; the session keeps its conversation and resumes on its next query."
	case was:
		msg = "Interrupted the running query of session " + s.ID + "."
	}
	return resulttext.Tool(msg), InterruptOutput{SessionID: s.ID, Interrupted: was, Forced: forced}, nil
}

func (h *handlers) model(ctx context.Context, req *mcp.CallToolRequest, in ModelInput) (*mcp.CallToolResult, ModelOutput, error) {
	if in.Model == "" {
		return nil, ModelOutput{}, errors.New("model is empty: pass an alias (opus, sonnet, haiku) or a model id")
	}
	s, err := h.session(ctx, in.SessionID)
	if err != nil {
		return nil, ModelOutput{}, toolError(err)
	}
	if err := agentOnly(s, "claude_chat_model"); err != nil {
		return nil, ModelOutput{}, err
	}
	resolved, err := s.SetModel(ctx, in.Model)
	if err != nil {
		return nil, ModelOutput{}, toolError(err)
	}
	out := ModelOutput{SessionID: s.ID, RequestedModel: in.Model}
	if resolved != "" {
		out.ResolvedModel = &resolved
	}
	return resulttext.Tool(fmt.Sprintf("Session %s now uses %s (%s).", s.ID, in.Model, resulttext.Model(resolved))), out, nil
}

func (h *handlers) mode(ctx context.Context, req *mcp.CallToolRequest, in ModeInput) (*mcp.CallToolResult, ModeOutput, error) {
	s, err := h.session(ctx, in.SessionID)
	if err != nil {
		return nil, ModeOutput{}, toolError(err)
	}
	if err := agentOnly(s, "claude_chat_mode"); err != nil {
		return nil, ModeOutput{}, err
	}
	if err := s.SetPermissionMode(ctx, in.PermissionMode); err != nil {
		return nil, ModeOutput{}, toolError(err)
	}
	return resulttext.Tool(fmt.Sprintf("Session %s now uses permission mode %s.", s.ID, in.PermissionMode)),
		ModeOutput{SessionID: s.ID, PermissionMode: in.PermissionMode}, nil
}

// toolError maps a sessions error: a busy session is a protocol error
// (InvalidParams), the rest are tool errors the model can read; the errors
// a tool call can mend name that tool (sessions speaks no MCP).
func toolError(err error) error {
	switch {
	case errors.Is(err, sessions.ErrBusy):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error() + "; wait for it to finish (claude_chat_wait) or call claude_chat_interrupt"}
	case errors.Is(err, sessions.ErrNotFound):
		return fmt.Errorf("%w: create one with claude_session_create (claude_session_list shows the open ones)", err)
	case errors.Is(err, sessions.ErrTooMany):
		return fmt.Errorf("%w; close one with claude_session_close first", err)
	case errors.Is(err, claudeagent.ErrCLINotFound):
		return fmt.Errorf("%w, or the server's operator names it with --claude-path (CLAUDE_AGENT_MCP_CLAUDE_PATH)", err)
	}
	return err
}
