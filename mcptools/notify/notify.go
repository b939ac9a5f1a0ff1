// Package notify sends the events of a query's turn to one tool call as
// MCP notifications: logging messages (logger claude/<sessionId>, at the
// client's level) and, when the call carries a progress token, progress
// notifications and a heartbeat.
//
// It owns what a notification of each event says and how long its text may
// be; it knows the call's request and the sessions' events, nothing of the
// tools, their results or tasks: the core (mcptools) makes a Notifier for a
// call that waits on a run and closes it before the call's result.
package notify

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// Notifier turns a turn's events into MCP notifications for one tool call:
// logging messages and, when the call carries a progress token, progress
// notifications with a monotonically increasing progress value. After
// Close nothing more is sent, so every notification precedes the result.
type Notifier struct {
	ctx     context.Context
	ss      *mcp.ServerSession
	token   any
	logger  string
	session string
	opts    Options

	mu       sync.Mutex
	closed   bool
	progress float64
	last     turn.Event
	partial  strings.Builder // the text being written (deltas since the last whole text)
	sentAt   time.Time       // when the text so far was last sent
}

// textEvery is how often the text being written is sent, at most.
const textEvery = 250 * time.Millisecond

// Options configure a Notifier.
type Options struct {
	// Thinking sends the turn's thinking blocks too (a query's
	// includeThinking).
	Thinking bool
	// TextCap cuts a text or thinking block in a log message
	// (--max-result-chars; < 0: uncut).
	TextCap int
	// Log gets the notifications that could not be sent (at debug level).
	Log *slog.Logger
}

// New returns the Notifier of the call req, whose query runs in session
// sessionID.
func New(ctx context.Context, req *mcp.CallToolRequest, sessionID string, opts Options) *Notifier {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	n := &Notifier{ctx: ctx, logger: "claude/" + sessionID, session: sessionID, opts: opts}
	if req != nil {
		n.ss = req.Session
		if req.Params != nil {
			n.token = req.Params.GetProgressToken()
		}
	}
	return n
}

// OnEvent implements [sessions.Listener].
func (n *Notifier) OnEvent(e turn.Event) {
	switch e.Kind {
	case turn.EventQueued:
		n.send("info", map[string]any{"type": "queued", "message": e.Text}, e.Text)
	case turn.EventTurnStarted:
		n.send("", nil, "turn started")
	case turn.EventTextDelta:
		if text, ok := n.textSoFar(e.Text); ok {
			n.send("info", map[string]any{"type": "text_so_far", "text": n.cut(text)}, "writing: "+tail(text, 200))
		}
	case turn.EventText:
		n.mu.Lock()
		n.partial.Reset() // the whole text replaces its deltas
		n.mu.Unlock()
		level := "info"
		if e.IsError {
			level = "error"
		}
		n.send(level, map[string]any{"type": "text", "text": n.cut(e.Text)}, "text: "+textcut.Cut(e.Text, 200))
	case turn.EventThinking:
		if n.opts.Thinking {
			n.send("info", map[string]any{"type": "thinking", "text": n.cut(e.Text)}, "thinking: "+textcut.Cut(e.Text, 200))
		}
	case turn.EventToolStarted:
		n.send("debug", map[string]any{"type": "tool_use", "tool": e.Tool, "id": e.ToolID, "input": e.Text},
			fmt.Sprintf("tool %s started: %s", e.Tool, textcut.Cut(e.Text, 200)))
	case turn.EventToolFinished:
		status := "finished"
		if e.IsError {
			status = "failed"
		}
		n.send("debug", map[string]any{"type": "tool_result", "tool": e.Tool, "id": e.ToolID, "isError": e.IsError, "output": textcut.Cut(e.Text, 2000)},
			fmt.Sprintf("tool %s %s", orTool(e.Tool), status))
	case turn.EventPermission:
		level := "info"
		if e.IsError {
			level = "warning"
		}
		n.send(level, map[string]any{"type": "permission", "tool": e.Tool, "id": e.ToolID, "denied": e.IsError, "message": e.Text}, "permission: "+e.Text)
	case turn.EventRetry:
		n.send("warning", map[string]any{"type": "api_retry", "message": e.Text}, e.Text)
	case turn.EventLimited:
		until := ""
		if !e.Until.IsZero() {
			until = e.Until.UTC().Format(time.RFC3339)
		}
		n.send("warning", map[string]any{"type": "limited", "until": until, "message": e.Text}, e.Text)
	case turn.EventLimitWarning:
		n.send("warning", map[string]any{"type": "limit_warning", "message": e.Text}, e.Text)
	case turn.EventHeartbeat:
		n.send("", nil, fmt.Sprintf("running for %s: %d API turn(s), %d tool call(s) so far", e.Elapsed.Round(time.Second), e.Turns, e.ToolsUsed))
	case turn.EventDone:
		if e.IsError {
			n.send("error", map[string]any{"type": "error", "message": e.Text}, "failed: "+textcut.Cut(e.Text, 200))
		}
		n.send("info", n.session+" completed", "done")
	}
	n.mu.Lock()
	n.last = e
	n.mu.Unlock()
}

// cut caps a block's text in a log message as finalText is capped: a 2 MB
// answer would otherwise go out whole in a notification (and be encoded,
// sent and decoded once more) while its result says it was cut.
func (n *Notifier) cut(text string) string {
	limit := n.opts.TextCap
	if limit < 0 || len(text) <= limit {
		return text
	}
	return fmt.Sprintf("%s\n\n[… cut: showing %d of %d characters; the transcript has the whole text]",
		textcut.Prefix(text, limit), limit, len(text))
}

// send emits a log message (when level is set) and a progress notification
// (when the call has a token).
func (n *Notifier) send(level string, data any, progress string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || n.ss == nil {
		return
	}
	if level != "" {
		//lint:ignore SA1019 log notifications serve clients of protocols before 2026-07-28 (and those asking in _meta)
		if err := n.ss.Log(n.ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(level), Logger: n.logger, Data: data}); err != nil {
			n.opts.Log.Debug("sending log notification", "err", err)
		}
	}
	if n.token != nil && progress != "" {
		n.progress++
		if err := n.ss.NotifyProgress(n.ctx, &mcp.ProgressNotificationParams{
			ProgressToken: n.token, Progress: n.progress, Message: progress,
		}); err != nil {
			n.opts.Log.Debug("sending progress notification", "err", err)
		}
	}
}

// Heartbeat sends a progress notification every interval (with the time
// since start and the tool calls so far) until the returned stop is
// called; stop waits for the goroutine to end.
func (n *Notifier) Heartbeat(interval time.Duration, start time.Time) (stop func()) {
	if n.token == nil || interval <= 0 {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-n.ctx.Done():
				return
			case <-t.C:
				n.mu.Lock()
				last := n.last
				n.mu.Unlock()
				n.OnEvent(turn.Event{Kind: turn.EventHeartbeat, Elapsed: time.Since(start), Turns: last.Turns, ToolsUsed: last.ToolsUsed})
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit); <-done })
	}
}

// Seed starts the heartbeat's counts from how far the run has come, for a
// call that attaches to a running query (claude_chat_wait), so that its
// heartbeats do not report zero tool calls until the next event.
func (n *Notifier) Seed(p sessions.Progress) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.last.Kind == "" {
		n.last.Turns, n.last.ToolsUsed = p.Turns, p.ToolsUsed
	}
}

// WantsText reports whether the call follows the turn's text as it is
// written (it carries a progress token): then the session's text deltas
// are wanted (sessions.Session.FollowText).
func (n *Notifier) WantsText() bool { return n.token != nil }

// textSoFar adds a delta to the text being written and returns that text
// when it is time to send it again (throttled to textEvery).
func (n *Notifier) textSoFar(delta string) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.partial.Len() < 1<<20 {
		n.partial.WriteString(delta)
	}
	if time.Since(n.sentAt) < textEvery {
		return "", false
	}
	n.sentAt = time.Now()
	return n.partial.String(), true
}

// tail is the end of s, at most n bytes, whole characters.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return "…" + s[i:]
}

// SawDone reports whether the turn's done event was sent through n.
func (n *Notifier) SawDone() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.last.Kind == turn.EventDone
}

// Close ends the notifications: nothing is sent after it.
func (n *Notifier) Close() {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
}

func orTool(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}
