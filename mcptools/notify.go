package mcptools

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/run"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// notifier turns a turn's events into MCP notifications for one tool call:
// logging messages (logger claude/<sessionId>, honouring the client's
// level) and, when the call carries a progress token, progress
// notifications with a monotonically increasing progress value. After
// close nothing more is sent, so every notification precedes the result.
type notifier struct {
	ctx      context.Context
	ss       *mcp.ServerSession
	token    any
	logger   string
	session  string
	thinking bool
	textCap  int // cuts a text or thinking block in a log message (--max-result-chars; < 0: uncut)
	log      *slog.Logger

	mu       sync.Mutex
	closed   bool
	progress float64
	last     turn.Event
}

func (h *handlers) newNotifier(ctx context.Context, req *mcp.CallToolRequest, sessionID string, thinking bool) *notifier {
	n := &notifier{ctx: ctx, logger: "claude/" + sessionID, session: sessionID, thinking: thinking, textCap: h.opts.MaxResultChars, log: h.log}
	if req != nil {
		n.ss = req.Session
		if req.Params != nil {
			n.token = req.Params.GetProgressToken()
		}
	}
	return n
}

// OnEvent implements [run.Listener].
func (n *notifier) OnEvent(e turn.Event) {
	switch e.Kind {
	case turn.EventQueued:
		n.send("info", map[string]any{"type": "queued", "message": e.Text}, e.Text)
	case turn.EventTurnStarted:
		n.send("", nil, "turn started")
	case turn.EventText:
		level := "info"
		if e.IsError {
			level = "error"
		}
		n.send(level, map[string]any{"type": "text", "text": n.cut(e.Text)}, "text: "+textcut.Cut(e.Text, 200))
	case turn.EventThinking:
		if n.thinking {
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
		n.send("warning", map[string]any{"type": "limited", "until": rfc3339(e.Until), "message": e.Text}, e.Text)
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
func (n *notifier) cut(text string) string {
	if n.textCap < 0 || len(text) <= n.textCap {
		return text
	}
	return fmt.Sprintf("%s\n\n[… cut: showing %d of %d characters; the transcript has the whole text]",
		textcut.Prefix(text, n.textCap), n.textCap, len(text))
}

// send emits a log message (when level is set) and a progress notification
// (when the call has a token).
func (n *notifier) send(level string, data any, progress string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || n.ss == nil {
		return
	}
	if level != "" {
		//lint:ignore SA1019 log notifications serve clients of protocols before 2026-07-28 (and those asking in _meta)
		if err := n.ss.Log(n.ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(level), Logger: n.logger, Data: data}); err != nil {
			n.log.Debug("sending log notification", "err", err)
		}
	}
	if n.token != nil && progress != "" {
		n.progress++
		if err := n.ss.NotifyProgress(n.ctx, &mcp.ProgressNotificationParams{
			ProgressToken: n.token, Progress: n.progress, Message: progress,
		}); err != nil {
			n.log.Debug("sending progress notification", "err", err)
		}
	}
}

// heartbeat sends a progress notification every interval (with the time
// since start and the tool calls so far) until the returned stop is
// called; stop waits for the goroutine to end.
func (n *notifier) heartbeat(interval time.Duration, start time.Time) (stop func()) {
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

// seed starts the heartbeat's counts from how far the run has come, for a
// call that attaches to a running query (claude_chat_wait), so that its
// heartbeats do not report zero tool calls until the next event.
func (n *notifier) seed(p run.Progress) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.last.Kind == "" {
		n.last.Turns, n.last.ToolsUsed = p.Turns, p.ToolsUsed
	}
}

// sawDone reports whether the turn's done event was sent through n.
func (n *notifier) sawDone() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.last.Kind == turn.EventDone
}

func (n *notifier) close() {
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
