package mcptools

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// collectTimeout is how long the result of a query whose call returned
// "running" is kept for claude_chat_wait once the turn has ended; a
// temporary (direct-query) session is discarded then.
const collectTimeout = 15 * time.Minute

// run is one query. It runs on its own context so that it can outlive the
// call that started it (waitSeconds); the calls that wait for it attach a
// notifier in turn.
type run struct {
	sessionID  string
	session    *sessions.Session
	temporary  bool // discard the session once the result is collected
	closeAfter bool
	thinking   bool
	start      time.Time
	cancel     context.CancelFunc
	started    chan struct{} // closed when the turn has started
	done       chan struct{} // closed when Query has returned
	result     *sessions.TurnResult
	err        error

	mu        sync.Mutex
	listener  *notifier
	activity  []string
	reported  int
	texts     []string
	turns     int // the turn's API round trips, as of the latest event
	toolsUsed int // and its tool calls
	collected bool
	startOnce sync.Once
	questions map[string]*question // permission questions for a retried call (modern protocol)
	asked     chan struct{}        // a token when a question was added
}

func (r *run) onEvent(e sessions.Event) {
	r.mu.Lock()
	switch e.Kind {
	case sessions.EventTurnStarted:
		r.startOnce.Do(func() { close(r.started) })
	case sessions.EventText:
		r.texts = append(r.texts, e.Text)
		r.activity = append(r.activity, "said: "+truncate(e.Text, 300))
	case sessions.EventToolStarted:
		r.activity = append(r.activity, fmt.Sprintf("tool %s started: %s", e.Tool, truncate(e.Text, 200)))
	case sessions.EventToolFinished:
		status := "finished"
		if e.IsError {
			status = "failed"
		}
		r.activity = append(r.activity, fmt.Sprintf("tool %s %s: %s", orTool(e.Tool), status, truncate(e.Text, 200)))
	case sessions.EventPermission:
		r.activity = append(r.activity, "permission: "+truncate(e.Text, 300))
	}
	r.turns, r.toolsUsed = e.Turns, e.ToolsUsed
	l := r.listener
	r.mu.Unlock()
	if l != nil {
		l.event(e)
	}
}

// attach makes n the run's listener. A call that attaches to a running
// query (claude_chat_wait) starts from the turn's counts so far, so its
// heartbeats do not report zero tool calls until the next event.
func (r *run) attach(n *notifier) {
	r.mu.Lock()
	r.listener = n
	turns, toolsUsed := r.turns, r.toolsUsed
	r.mu.Unlock()
	n.mu.Lock()
	if n.last.Kind == "" {
		n.last.Turns, n.last.ToolsUsed = turns, toolsUsed
	}
	n.mu.Unlock()
}

func (r *run) detach(n *notifier) {
	r.mu.Lock()
	if r.listener == n {
		r.listener = nil
	}
	r.mu.Unlock()
	n.close()
}

// startRun starts a query in the background and returns once its turn has
// started, or with the error that kept it from starting (a busy session is
// refused at once).
//
// n, the notifier of the call that starts it, receives the events from the
// first one on.
func (h *handlers) startRun(req *mcp.CallToolRequest, s *sessions.Session, prompt string, thinking, temporary, closeAfter bool, n *notifier) (*run, error) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &run{sessionID: s.ID, session: s, temporary: temporary, closeAfter: closeAfter, thinking: thinking,
		start: time.Now(), cancel: cancel, started: make(chan struct{}), done: make(chan struct{}), listener: n,
		questions: map[string]*question{}, asked: make(chan struct{}, 1)}
	ask := h.asker(req)
	if ask != nil && modernEra(req) {
		ask = questionAsker(r)
	}
	go func() {
		defer cancel()
		r.result, r.err = s.Query(ctx, prompt, sessions.QueryOptions{IncludeThinking: thinking, OnEvent: r.onEvent, AskPermission: ask})
		close(r.done)
		h.finished(r)
	}()
	select {
	case <-r.started:
	case <-r.done:
		if r.err != nil {
			r.detach(n)
			return nil, r.err
		}
	}
	h.mu.Lock()
	h.runs[s.ID] = r
	h.mu.Unlock()
	return r, nil
}

// finished schedules the clean-up of a result nobody is waiting for.
func (h *handlers) finished(r *run) {
	r.mu.Lock()
	waiting := r.listener != nil || r.collected
	r.mu.Unlock()
	if waiting {
		return
	}
	time.AfterFunc(collectTimeout, func() {
		if h.collect(r) {
			h.log.Info("dropping an uncollected query result", "session_id", r.sessionID)
			h.release(r)
		}
	})
}

// collect marks r's result as returned; only the first caller gets true.
func (h *handlers) collect(r *run) bool {
	r.mu.Lock()
	first := !r.collected
	r.collected = true
	r.mu.Unlock()
	if first {
		h.mu.Lock()
		if h.runs[r.sessionID] == r {
			delete(h.runs, r.sessionID)
		}
		h.mu.Unlock()
	}
	return first
}

// release closes the run's session when the query asked for that.
func (h *handlers) release(r *run) {
	switch {
	case r.temporary:
		h.mgr.Discard(r.session)
	case r.closeAfter:
		_, _ = h.mgr.Close(r.sessionID)
	}
}

// await waits for r on behalf of one call, streaming its events to the
// call, for at most wait (0: until the end). Cancelling the call
// interrupts the turn when interruptOnCancel is set.
//
// n is the call's notifier; it is attached here if it is not yet.
// On the modern protocol a permission question ends the call with an
// input-required result (see mrtr.go).
func (h *handlers) await(ctx context.Context, req *mcp.CallToolRequest, n *notifier, r *run, wait time.Duration, interruptOnCancel bool) (*mcp.CallToolResult, QueryOutput, error) {
	r.attach(n)
	var asked <-chan struct{}
	if modernEra(req) {
		asked = r.asked
		if q := r.nextQuestion(); q != nil {
			r.detach(n)
			return h.inputRequired(r, q), QueryOutput{}, nil
		}
	}
	stop := n.heartbeat(h.opts.HeartbeatInterval, r.start)
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	var cancelled bool
	var q *question
	select {
	case <-r.done:
	case <-asked:
		q = r.nextQuestion()
	case <-timeout:
	case <-ctx.Done():
		if interruptOnCancel {
			r.cancel()
			<-r.done
		} else {
			cancelled = true
		}
	}
	stop()
	finished := false
	select {
	case <-r.done:
		finished = true
	default:
	}
	if finished && h.collect(r) {
		// The completion notice goes out before the result, also to a
		// call that attached after the turn had ended.
		if !n.sawDone() && r.err == nil {
			n.event(sessions.Event{Kind: sessions.EventDone, IsError: r.result.IsError, Text: r.result.ErrorText})
		}
		r.detach(n)
		defer h.release(r)
		if r.err != nil {
			return nil, QueryOutput{}, toolError(r.err)
		}
		h.capText(r.session, r.result)
		out := queryOutput(r.sessionID, r.result)
		out.Status = "completed"
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: resultText(r.sessionID, r.result)}}, IsError: r.result.IsError}, out, nil
	}
	r.detach(n)
	if q != nil && !finished {
		return h.inputRequired(r, q), QueryOutput{}, nil
	}
	if finished {
		return nil, QueryOutput{}, fmt.Errorf("the result of the query in session %s was already returned to another call", r.sessionID)
	}
	if cancelled {
		return nil, QueryOutput{}, ctx.Err()
	}
	return h.running(r)
}

// running describes a query that is still running: its text so far and
// the activity since the last report.
func (h *handlers) running(r *run) (*mcp.CallToolResult, QueryOutput, error) {
	r.mu.Lock()
	activity := append([]string{}, r.activity[r.reported:]...)
	r.reported = len(r.activity)
	partial := strings.Join(r.texts, "\n\n")
	tools := r.toolsUsed
	r.mu.Unlock()
	elapsed := time.Since(r.start)
	info := r.session.Info()
	out := QueryOutput{
		Status: "running", PartialText: truncate(partial, 4000), Activity: activity, ElapsedMs: elapsed.Milliseconds(),
		ToolInvocations: []sessions.ToolInvocation{}, SessionID: r.sessionID, ClaudeSessionID: info.ClaudeSessionID,
		Metadata: Metadata{Model: info.Model, PermissionDenials: []sessions.PermissionDenial{}},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Still running after %s (%d tool call(s) so far); the turn goes on in the background.\n", elapsed.Round(time.Second), tools)
	fmt.Fprintf(&b, "Call claude_chat_wait {\"sessionId\": %q} to get the result (it waits up to waitSeconds), or claude_chat_interrupt to stop it.\n", r.sessionID)
	if len(activity) > 0 {
		b.WriteString("\nSince the last report:\n")
		for _, a := range activity {
			b.WriteString("- " + a + "\n")
		}
	}
	fmt.Fprintf(&b, "\n[sessionId %s · claudeSessionId %s]", r.sessionID, info.ClaudeSessionID)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, out, nil
}

// WaitInput is claude_chat_wait's arguments.
type WaitInput struct {
	SessionID   string `json:"sessionId" jsonschema:"The session whose query returned status running."`
	WaitSeconds int    `json:"waitSeconds,omitempty" jsonschema:"Return status running again if the turn has not ended after this many seconds. Default: the server's --default-wait (0 waits for the end)."`
}

func (h *handlers) wait(ctx context.Context, req *mcp.CallToolRequest, in WaitInput) (*mcp.CallToolResult, QueryOutput, error) {
	wait, err := h.waitDuration(in.WaitSeconds)
	if err != nil {
		return nil, QueryOutput{}, err
	}
	if req.Params.RequestState != "" {
		r, err := h.resumeCall(req)
		if err != nil {
			return nil, QueryOutput{}, err
		}
		return h.await(ctx, req, newNotifier(ctx, req, r.sessionID, r.thinking, h.log), r, wait, false)
	}
	h.mu.Lock()
	r := h.runs[in.SessionID]
	h.mu.Unlock()
	if r == nil {
		if _, err := h.mgr.Get(in.SessionID); err != nil {
			return nil, QueryOutput{}, toolError(err)
		}
		return nil, QueryOutput{}, fmt.Errorf("no query to wait for in session %s: none is running and every result was already returned; start one with claude_chat_query", in.SessionID)
	}
	return h.await(ctx, req, newNotifier(ctx, req, r.sessionID, r.thinking, h.log), r, wait, false)
}

func (h *handlers) waitDuration(seconds int) (time.Duration, error) {
	switch {
	case seconds < 0:
		return 0, fmt.Errorf("invalid waitSeconds %d: use a positive number of seconds, or omit it", seconds)
	case seconds > 0:
		return time.Duration(seconds) * time.Second, nil
	}
	return h.opts.DefaultWait, nil
}
