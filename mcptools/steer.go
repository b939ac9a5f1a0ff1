package mcptools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/resulttext"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/images"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// Steering (claude_chat_steer): a message into a session's running query
// (sessions.Session.Steer). The query's own call returns its result as
// before; when the CLI answers the message in a turn of its own, that
// result says so (followUp) and the follow-up is the session's next run to
// collect: claude_chat_wait returns it, and a task waits for it.

// SteerInput is claude_chat_steer's arguments.
type SteerInput struct {
	SessionID string         `json:"sessionId"`
	Message   string         `json:"message"`
	Images    []images.Input `json:"images,omitempty" jsonschema:"As in claude_chat_query"`
}

// SteerOutput is claude_chat_steer's result.
type SteerOutput struct {
	SessionID string `json:"sessionId"`
	Sent      bool   `json:"sent"`
}

// FollowUpOutput is the turn in which the CLI answers a message steered
// into a query (QueryOutput.FollowUp).
type FollowUpOutput struct {
	Status    string `json:"status"`
	FinalText string `json:"finalText,omitempty"`
	Error     string `json:"error,omitempty"`
}

func (h *handlers) steer(ctx context.Context, req *mcp.CallToolRequest, in SteerInput) (*mcp.CallToolResult, SteerOutput, error) {
	if len(in.Message) > h.opts.MaxPromptBytes {
		return nil, SteerOutput{}, fmt.Errorf("message is too large: %d bytes, and this server accepts at most %d (--max-prompt-bytes)", len(in.Message), h.opts.MaxPromptBytes)
	}
	s, err := h.session(ctx, in.SessionID)
	if err != nil {
		return nil, SteerOutput{}, toolError(err)
	}
	imgs, err := s.LoadImages(in.Images)
	if err != nil {
		return nil, SteerOutput{}, err
	}
	if err := s.Steer(ctx, in.Message, imgs); err != nil {
		if errors.Is(err, sessions.ErrNotRunning) || errors.Is(err, turn.ErrSteerLimit) {
			return nil, SteerOutput{}, err // it names claude_chat_query
		}
		return nil, SteerOutput{}, toolError(err)
	}
	text := fmt.Sprintf("Sent into the running query of session %s: Claude Code reads it at its next step. The query's result comes as before; "+
		"if the message is answered in a turn of its own, that result says followUp, and claude_chat_wait {\"sessionId\": %q} returns the answer.", s.ID, s.ID)
	return resulttext.Tool(text), SteerOutput{SessionID: s.ID, Sent: true}, nil
}

// followUpStarted gives a follow-up's run (sessions.Manager.OnFollowUp)
// its views: the dashboard's feed, when one runs, watches it whole. Its
// result waits for claude_chat_wait (or a task) to collect it.
func (h *handlers) followUpStarted(r *sessions.Run) {
	if h.dash != nil {
		f := h.dash.Watch(r.Session())
		f.Bind(r)
		r.Watch(f)
	}
}

// followUpNote says in a query's result that a steered message is
// answered in a turn of its own.
func followUpNote(sessionID string) string {
	return fmt.Sprintf("\n\n(A message steered into this query is answered in a turn of its own, still running: claude_chat_wait {\"sessionId\": %q} returns its answer.)", sessionID)
}

// awaitFollowUp waits for the follow-up a query's result announced and
// collects it (for a task, which ends with it); nil when there is none to
// collect.
func awaitFollowUp(s *sessions.Session) *turn.Result {
	r := s.CurrentRun()
	if r == nil {
		return nil
	}
	<-r.Done()
	res, err, ok := r.Collect()
	if !ok || err != nil {
		return nil
	}
	return res
}

// followUpOf is a follow-up's answer in a query's result.
func followUpOf(r *turn.Result) *FollowUpOutput {
	out := &FollowUpOutput{Status: "completed", FinalText: r.FinalText}
	if r.IsError {
		out.Error = r.ErrorText
	}
	return out
}

// followUpText is the follow-up's answer after the query's.
func followUpText(sessionID string, r *turn.Result) string {
	return "\n\nThe message steered into this query was answered in a turn of its own:\n\n" + resulttext.Result(sessionID, r)
}

// sessionLabel names a session in a list: its name, if it has one, and
// its id.
func sessionLabel(i sessions.Info) string {
	if i.Name == "" {
		return i.SessionID
	}
	return fmt.Sprintf("%q (%s)", i.Name, i.SessionID)
}

// doingNow says what a session is doing, for a person or a model reading
// a list: a running query's time, tool calls and latest step, or that it
// waits for a permission answer; else its state.
func doingNow(s *sessions.Session, i sessions.Info) string {
	switch i.State {
	case state.Running:
		r := s.CurrentRun()
		if r == nil {
			return "running"
		}
		p := r.Progress()
		doing := fmt.Sprintf("running for %s, %d tool call(s)", p.Elapsed.Round(time.Second), p.ToolsUsed)
		if qs := r.Questions(); len(qs) > 0 {
			if asked, ok := questionsOf(qs[0].PermissionRequest); ok {
				return doing + "; waiting for an answer to its question (" + textcut.Cut(asked[0].Question, 120) + ")"
			}
			return doing + "; waiting for a permission answer (" + qs[0].ToolName + ")"
		}
		if prompt, steered := r.Prompt(); steered {
			doing += "; answering a steered message (" + textcut.Cut(prompt, 60) + ")"
		}
		if p.LastStep != "" {
			doing += "; now: " + textcut.Cut(p.LastStep, 120)
		}
		return doing
	case state.Queued:
		return fmt.Sprintf("queued for a live process (#%d)", i.QueuePosition)
	case state.Idle:
		return "idle since " + i.LastUsed.Format(time.TimeOnly)
	case state.Dormant:
		return "dormant (its next query resumes it)"
	case state.Refused, state.Failed:
		return string(i.State) + ": " + i.Failure
	}
	return string(i.State)
}
