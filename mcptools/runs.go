package mcptools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/notify"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/resulttext"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// The calls that follow a query are views of its sessions.Run: the query
// call itself (launch), claude_chat_wait and the retried call of an
// input-required result (await), and MCP tasks (tasks.go); the dashboard
// watches it (dashfeed.go).

// launch starts a query in s and waits for it on behalf of this call.
func (h *handlers) launch(ctx context.Context, req *mcp.CallToolRequest, s *sessions.Session, prompt string,
	ro sessions.QueryOptions, wait time.Duration) (*mcp.CallToolResult, QueryOutput, error) {
	callStart := time.Now()
	n := h.notifier(ctx, req, s.ID, notify.Options{Thinking: ro.IncludeThinking})
	ro.Listener = n
	started := h.watch(s, &ro)
	if slot := taskSlotFrom(ctx); slot != nil {
		// Do not wait for a process that is queued or still starting
		// beyond the grace.
		ro.ReturnAfter = slot.grace()
	} else if wait > 0 {
		ro.ReturnAfter = wait
	}
	ask := h.asker(req)
	switch {
	case ask != nil && modernEra(req):
		ro.QueueQuestions = true // answered by the retried call (inputrequired.go), or the dashboard
	case h.dash != nil:
		ro.AskPermission = h.dash.Asker(s, ask) // the client (if it can be asked) or the dashboard, whoever answers first
	default:
		ro.AskPermission = ask
	}
	if n.WantsText() {
		defer s.FollowText()() // from the turn's first delta (await follows too)
	}
	r, err := s.StartRun(ctx, prompt, ro)
	started(r, err)
	if err != nil {
		n.Close()
		return nil, QueryOutput{}, toolError(err)
	}
	if wait > 0 {
		wait = max(wait-time.Since(callStart), time.Millisecond) // waitSeconds counts from the call
	}
	return h.await(ctx, req, n, r, wait, true)
}

// await waits for r on behalf of one call, streaming its events to the
// call through n, for at most wait (0: until the end). Cancelling the call
// interrupts the turn when interruptOnCancel is set. On the modern protocol
// a permission question ends the call with an input-required result (see
// inputrequired.go).
func (h *handlers) await(ctx context.Context, req *mcp.CallToolRequest, n *notify.Notifier, r *sessions.Run, wait time.Duration, interruptOnCancel bool) (*mcp.CallToolResult, QueryOutput, error) {
	n.Seed(r.Attach(n))
	defer n.Close()
	defer r.Detach(n)
	if n.WantsText() {
		defer r.Session().FollowText()()
	}
	slot := taskSlotFrom(ctx)
	if slot != nil {
		// A task, unless the turn ends within the grace.
		wait = slot.grace()
	}
	var asked <-chan struct{}
	if modernEra(req) {
		asked = r.Asked()
		if q := firstQuestion(r); q != nil {
			if slot != nil {
				slot.task = h.newTask(ctx, req.Params.Name, r)
				return nil, QueryOutput{}, nil
			}
			return h.inputRequired(r, q), QueryOutput{}, nil
		}
	}
	stop := n.Heartbeat(h.opts.HeartbeatInterval, r.Started())
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	var cancelled bool
	var q *sessions.Question
	select {
	case <-r.Done():
	case <-asked:
		q = firstQuestion(r)
	case <-timeout:
	case <-ctx.Done():
		if interruptOnCancel {
			r.Cancel()
			<-r.Done()
		} else {
			cancelled = true
		}
	}
	stop()
	finished := isClosed(r.Done())
	if finished {
		if res, err, ok := r.Collect(); ok {
			// The completion notice goes out before the result, also to a
			// call that attached after the turn had ended.
			if !n.SawDone() && err == nil {
				n.OnEvent(turn.Event{Kind: turn.EventDone, IsError: res.IsError, Text: res.ErrorText})
			}
			return h.finalResult(r.Session(), res, err)
		}
		return nil, QueryOutput{}, fmt.Errorf("the result of the query in session %s was already returned to another call", r.Session().ID)
	}
	if slot != nil && !cancelled {
		// The middleware answers the call with the task.
		slot.task = h.newTask(ctx, req.Params.Name, r)
		return nil, QueryOutput{}, nil
	}
	if q != nil {
		return h.inputRequired(r, q), QueryOutput{}, nil
	}
	if cancelled {
		return nil, QueryOutput{}, ctx.Err()
	}
	return h.running(r)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// finalResult is the result of a finished query, as every view returns it.
func (h *handlers) finalResult(s *sessions.Session, r *turn.Result, err error) (*mcp.CallToolResult, QueryOutput, error) {
	if err != nil {
		return nil, QueryOutput{}, toolError(err)
	}
	h.capText(s, r)
	out := queryOutput(s.ID, r)
	out.Status = "completed"
	out.Worktree = s.WorktreeInfo(context.Background())
	if !s.Info().Temporary {
		out.Persisted = h.persisted()
	}
	text := resulttext.Result(s.ID, r)
	if r.FollowUp {
		out.FollowUp = &FollowUpOutput{Status: "running"}
		text += followUpNote(s.ID)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: r.IsError}, out, nil
}

// running describes a query that is still running: its text so far and
// the activity since the last report.
func (h *handlers) running(r *sessions.Run) (*mcp.CallToolResult, QueryOutput, error) {
	activity := r.TakeActivity()
	p := r.Progress()
	s := r.Session()
	info := s.Info()
	out := QueryOutput{
		Status: "running", PartialText: p.Text, Activity: activity, ElapsedMs: p.Elapsed.Milliseconds(),
		ToolInvocations: []turn.ToolInvocation{}, SessionID: s.ID, ClaudeSessionID: info.ClaudeSessionID,
		Metadata: Metadata{Model: info.Model, PermissionDenials: []turn.PermissionDenial{}}, LimitedUntil: resulttext.RFC3339(p.LimitedUntil),
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Still running after %s (%d tool call(s) so far); the turn goes on in the background.\n", p.Elapsed.Round(time.Second), p.ToolsUsed)
	if line := resulttext.Parked(p); line != "" {
		b.WriteString(line + "\n")
	}
	fmt.Fprintf(&b, "Call claude_chat_wait {\"sessionId\": %q} to get the result (it waits up to waitSeconds), or claude_chat_interrupt to stop it.\n", s.ID)
	if len(activity) > 0 {
		b.WriteString("\nSince the last report:\n")
		for _, a := range activity {
			b.WriteString("- " + a + "\n")
		}
	}
	fmt.Fprintf(&b, "\n[sessionId %s · claudeSessionId %s]", s.ID, info.ClaudeSessionID)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, out, nil
}

// WaitInput is claude_chat_wait's arguments.
type WaitInput struct {
	SessionID   string `json:"sessionId"`
	WaitSeconds int    `json:"waitSeconds,omitempty" jsonschema:"Seconds, then status running"`
}

func (h *handlers) wait(ctx context.Context, req *mcp.CallToolRequest, in WaitInput) (*mcp.CallToolResult, QueryOutput, error) {
	wait, err := h.waitDuration(in.WaitSeconds)
	if err != nil {
		return nil, QueryOutput{}, err
	}
	if req.Params.RequestState != "" {
		return h.retried(ctx, req, wait, false)
	}
	s, err := h.session(ctx, in.SessionID)
	if err != nil {
		return nil, QueryOutput{}, toolError(err)
	}
	r := s.CurrentRun()
	if r == nil {
		return nil, QueryOutput{}, fmt.Errorf("no query to wait for in session %s: none is running and every result was already returned; start one with claude_chat_query", in.SessionID)
	}
	if owner := r.Owner(); owner != "" {
		return nil, QueryOutput{}, fmt.Errorf("the query of session %s runs as %s: its result comes with tasks/get, not claude_chat_wait", s.ID, owner)
	}
	return h.await(ctx, req, h.notifier(ctx, req, s.ID, notify.Options{Thinking: r.Thinking()}), r, wait, false)
}

func (h *handlers) waitDuration(seconds int) (time.Duration, error) {
	switch {
	case seconds < 0:
		return 0, fmt.Errorf("invalid waitSeconds %d: use a positive number of seconds, or omit it", seconds)
	case seconds > 0:
		seconds = min(seconds, maxWaitSeconds)
		return time.Duration(seconds) * time.Second, nil
	}
	return h.opts.DefaultWait, nil
}

// notifier is the notify.Notifier of a call waiting on a run in session
// sessionID, with the server's cap on a block's text (--max-result-chars)
// and log.
func (h *handlers) notifier(ctx context.Context, req *mcp.CallToolRequest, sessionID string, opts notify.Options) *notify.Notifier {
	opts.TextCap, opts.Log = h.opts.MaxResultChars, h.log
	return notify.New(ctx, req, sessionID, opts)
}

// maxWaitSeconds is the largest waitSeconds honoured (a day); larger
// values are clamped to it (they would overflow a time.Duration).
const maxWaitSeconds = 86400
