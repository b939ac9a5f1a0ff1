package mcptools

import (
	"encoding/json"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/images"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
)

// CreateInput is claude_session_create's arguments: the session options.
type CreateInput struct {
	sessions.CreateOptions
}

// CreateOutput is claude_session_create's result.
type CreateOutput struct {
	SessionID       string         `json:"sessionId" jsonschema:"Our id of the session; pass it to the claude_chat_* tools."`
	ClaudeSessionID string         `json:"claudeSessionId" jsonschema:"The CLI's own session id (usable as resumeSessionId)."`
	Model           string         `json:"model" jsonschema:"The resolved model id (empty when the CLI did not say)."`
	Cwd             string         `json:"cwd"`
	PermissionMode  string         `json:"permissionMode"`
	Active          bool           `json:"active" jsonschema:"True when the claude process is up and answered initialize."`
	Persisted       *bool          `json:"persisted,omitempty" jsonschema:"false when the server cannot write its session store: the session will not survive a restart."`
	Worktree        *worktree.Info `json:"worktree,omitempty" jsonschema:"The session's own git worktree."`
}

// SessionInput names a session.
type SessionInput struct {
	SessionID string `json:"sessionId"`
}

// CloseOutput is claude_session_close's result.
type CloseOutput struct {
	SessionID      string         `json:"sessionId"`
	Closed         bool           `json:"closed"`
	ActiveSessions int            `json:"activeSessions" jsonschema:"How many sessions remain open."`
	Worktree       *worktree.Info `json:"worktree,omitempty" jsonschema:"The session's worktree: removed when nothing changed in it, else kept where it says."`
}

// QueryInput is claude_chat_query's arguments.
type QueryInput struct {
	SessionID       string         `json:"sessionId"`
	Prompt          string         `json:"prompt"`
	Images          []images.Input `json:"images,omitempty" jsonschema:"Each {path} or {data, mediaType}"`
	Effort          string         `json:"effort,omitempty"`
	CloseAfter      bool           `json:"closeAfter,omitempty"`
	IncludeThinking bool           `json:"includeThinking,omitempty"`
	WaitSeconds     int            `json:"waitSeconds,omitempty" jsonschema:"Seconds, then status running"`
	OnUsageLimit    string         `json:"onUsageLimit,omitempty"`
}

// DirectInput is claude_direct_query's arguments (its schema has no
// descriptions: see directSchema).
type DirectInput struct {
	Prompt          string         `json:"prompt"`
	Images          []images.Input `json:"images,omitempty"`
	IncludeThinking bool           `json:"includeThinking,omitempty"`
	WaitSeconds     int            `json:"waitSeconds,omitempty"`
	OnUsageLimit    string         `json:"onUsageLimit,omitempty"`
	sessions.CreateOptions
}

// Metadata describes how a turn went.
type Metadata struct {
	Usage             turn.Usage              `json:"usage"`
	DurationMs        int64                   `json:"durationMs"`
	DurationAPIMs     int64                   `json:"durationApiMs"`
	NumTurns          int                     `json:"numTurns"`
	TotalCostUSD      float64                 `json:"totalCostUsd" jsonschema:"Cost of this query in USD as the CLI computes it (API-equivalent; not a bill on subscription plans)."`
	Model             string                  `json:"model"`
	StopReason        string                  `json:"stopReason"`
	Subtype           string                  `json:"subtype"`
	TerminalReason    string                  `json:"terminalReason,omitempty"`
	IsError           bool                    `json:"isError"`
	PermissionDenials []turn.PermissionDenial `json:"permissionDenials"`
}

// QueryOutput is the result of claude_chat_query and claude_direct_query.
type QueryOutput struct {
	FinalText        string                `json:"finalText" jsonschema:"The turn's final answer (empty while running)."`
	StructuredOutput json.RawMessage       `json:"structuredOutput,omitempty" jsonschema:"With jsonSchema: the answer as JSON matching it."`
	Status           string                `json:"status" jsonschema:"completed, or running when waitSeconds passed first: then collect the result with claude_chat_wait."`
	PartialText      string                `json:"partialText,omitempty" jsonschema:"While running: the assistant text so far."`
	Activity         []string              `json:"activity,omitempty" jsonschema:"While running: what happened since the last report."`
	ElapsedMs        int64                 `json:"elapsedMs,omitempty"`
	Error            string                `json:"error,omitempty" jsonschema:"What went wrong, when the turn failed."`
	Thinking         []string              `json:"thinking,omitempty"`
	ToolInvocations  []turn.ToolInvocation `json:"toolInvocations"`
	SessionID        string                `json:"sessionId"`
	ClaudeSessionID  string                `json:"claudeSessionId"`
	Interrupted      bool                  `json:"interrupted"`
	Recovered        string                `json:"recovered,omitempty" jsonschema:"replayed: the conversation's record was lost (claude was killed before writing it), so this turn started afresh with the earlier conversation given as notes."`
	LimitedUntil     string                `json:"limitedUntil,omitempty" jsonschema:"RFC 3339: when the account's usage limit resets. Completed: the limit ended the query (onUsageLimit fail, a reset too far away, or its wait was cut short). Running: the query waits for it and goes on by itself."`
	LimitNote        string                `json:"limitNote,omitempty" jsonschema:"The CLI's warning that the usage limit is near."`
	Metadata         Metadata              `json:"metadata"`
	Questions        []turn.QuestionAsked  `json:"questions,omitempty" jsonschema:"The clarifying questions Claude Code asked in this query: each with the answer given, or, unanswered, what Claude Code was told instead."`
	Worktree         *worktree.Info        `json:"worktree,omitempty" jsonschema:"The session's git worktree: where it is and what changed in it."`
	Persisted        *bool                 `json:"persisted,omitempty" jsonschema:"false when the server cannot write its session store: the session will not survive a restart."`
	FollowUp         *FollowUpOutput       `json:"followUp,omitempty" jsonschema:"A message steered into the query is answered in a turn of its own: running (claude_chat_wait returns it), or, for a task, its answer."`
}

// InterruptOutput is claude_chat_interrupt's result.
type InterruptOutput struct {
	SessionID   string `json:"sessionId"`
	Interrupted bool   `json:"interrupted" jsonschema:"True if a query was running and was interrupted."`
	Forced      bool   `json:"forced,omitempty" jsonschema:"True when claude did not acknowledge the interrupt and its process was stopped (the session resumes on its next query)."`
}

// ModelInput is claude_chat_model's arguments.
type ModelInput struct {
	SessionID string `json:"sessionId"`
	Model     string `json:"model" jsonschema:"opus, sonnet, haiku or an id"`
}

// ModelOutput is claude_chat_model's result.
type ModelOutput struct {
	SessionID      string  `json:"sessionId"`
	RequestedModel string  `json:"requestedModel"`
	ResolvedModel  *string `json:"resolvedModel" jsonschema:"The full model id, or null when it cannot be known."`
}

// ModeInput is claude_chat_mode's arguments.
type ModeInput struct {
	SessionID      string `json:"sessionId"`
	PermissionMode string `json:"permissionMode"`
}

// ModeOutput is claude_chat_mode's result.
type ModeOutput struct {
	SessionID      string `json:"sessionId"`
	PermissionMode string `json:"permissionMode"`
}

// ListInput is claude_session_list's arguments.
type ListInput struct {
	SessionID string `json:"sessionId,omitempty"`
	Cursor    string `json:"cursor,omitempty"`
	Limit     int    `json:"limit,omitempty"`
	State     string `json:"state,omitempty"`
	Name      string `json:"name,omitempty"`
}

// SessionInfo describes one session.
type SessionInfo struct {
	SessionID       string         `json:"sessionId"`
	ClaudeSessionID string         `json:"claudeSessionId"`
	Cwd             string         `json:"cwd"`
	Model           string         `json:"model"`
	PermissionMode  string         `json:"permissionMode"`
	State           string         `json:"state" jsonschema:"starting, queued (waiting for a live process), idle, running, dormant (no process; the next query resumes it), refused (the server's policy no longer lets it run; see failure) or failed."`
	Created         string         `json:"created"`
	LastUsed        string         `json:"lastUsed"`
	Queries         int            `json:"queries"`
	Usage           turn.Usage     `json:"usage"`
	TotalCostUSD    float64        `json:"totalCostUsd"`
	PID             int            `json:"pid,omitempty" jsonschema:"The claude process id while live."`
	Profile         string         `json:"profile,omitempty"`
	Failure         string         `json:"failure,omitempty"`
	QueuePosition   int            `json:"queuePosition,omitempty" jsonschema:"While queued: its place in the queue for a live process (1 is next)."`
	Name            string         `json:"name,omitempty"`
	Effort          string         `json:"effort,omitempty"`
	Worktree        *worktree.Info `json:"worktree,omitempty"`
	RunningTask     string         `json:"runningTask,omitempty" jsonschema:"The MCP task id of its running query, when the query was answered with a task."`
	AgentTool       string         `json:"agentTool,omitempty" jsonschema:"The agent tool that started it: only that tool continues it."`
	LimitedUntil    string         `json:"limitedUntil,omitempty" jsonschema:"RFC 3339: when the usage limit its latest query met resets (its queries wait for it, or fail with onUsageLimit fail)."`
	LimitNote       string         `json:"limitNote,omitempty" jsonschema:"The CLI's latest warning that the usage limit is near."`
}

// ListOutput is claude_session_list's result.
type ListOutput struct {
	Sessions    []SessionInfo `json:"sessions"`
	LiveCount   int           `json:"liveProcesses"`
	Queued      int           `json:"queued" jsonschema:"Queries waiting for a live process (--max-live)."`
	MaxSessions int           `json:"maxSessions"`
	MaxLive     int           `json:"maxLive"`
	// DashboardURL is the live dashboard's link (--ui), for the person.
	DashboardURL string `json:"dashboardUrl,omitempty"`
	NextCursor   string `json:"nextCursor,omitempty"`
}

// HistoryInput is claude_session_history's arguments.
type HistoryInput struct {
	SessionID string `json:"sessionId"`
	Cursor    string `json:"cursor,omitempty" jsonschema:"olderCursor or newerCursor"`
	Limit     int    `json:"limit,omitempty"`
}

// HistoryOutput is one page of a conversation, oldest first.
type HistoryOutput struct {
	SessionID   string          `json:"sessionId"`
	Name        string          `json:"name,omitempty"`
	Entries     []history.Entry `json:"entries"`
	Total       int             `json:"total"`
	Cursor      string          `json:"cursor" jsonschema:"Where this page starts."`
	OlderCursor string          `json:"olderCursor,omitempty" jsonschema:"Pass as cursor for the page before this one."`
	NewerCursor string          `json:"newerCursor,omitempty" jsonschema:"Pass as cursor for the page after this one."`
}
