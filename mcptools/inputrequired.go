package mcptools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/notify"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// Input-required results of multi-round-trip tool calls (MRTR). On
// protocol 2026-07-28 a server cannot send elicitation/create while it
// serves a call; it returns the question in the result (InputRequests, SEP
// 2322) and the client calls the tool again with the answer. The query
// keeps running meanwhile, so a permission question becomes: the call
// returns the question; the retried call delivers the answer and waits on.

// modernEra reports whether the call uses the stateless protocol.
func modernEra(req *mcp.CallToolRequest) bool {
	return req != nil && req.ProtocolVersion() >= "2026-07-28"
}

// firstQuestion returns the oldest unanswered question of r, if any.
func firstQuestion(r *sessions.Run) *sessions.Question {
	if qs := r.Questions(); len(qs) > 0 {
		return qs[0]
	}
	return nil
}

// elicitParams is the form that asks q.
func elicitParams(q *sessions.Question) *mcp.ElicitParams {
	return formOf(q.PermissionRequest)
}

// inputRequired ends a call with the question q; the client answers it and
// calls the tool again with RequestState.
func (h *handlers) inputRequired(r *sessions.Run, q *sessions.Question) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{q.ID: elicitParams(q)},
		RequestState:  h.states.Sign(strings.Join([]string{r.Session().ID, r.ID, q.ID}, "|")),
	}
}

// retried continues a call that the client retried with the answer to a
// permission question: it delivers the answer and waits on the run.
func (h *handlers) retried(ctx context.Context, req *mcp.CallToolRequest, wait time.Duration, interruptOnCancel bool) (*mcp.CallToolResult, QueryOutput, error) {
	state, err := h.states.Verify(req.Params.RequestState)
	if err != nil {
		return nil, QueryOutput{}, err
	}
	parts := strings.Split(state, "|")
	if len(parts) != 3 {
		return nil, QueryOutput{}, errors.New("invalid requestState: it must be echoed unchanged from this server's input-required result")
	}
	s, err := h.session(ctx, parts[0])
	if err != nil {
		return nil, QueryOutput{}, toolError(err)
	}
	r := s.CurrentRun()
	if r == nil || r.ID != parts[1] {
		return nil, QueryOutput{}, fmt.Errorf("the query of session %s that asked for permission is no longer running, and its result was returned", s.ID)
	}
	answer(r, parts[2], req.Params.InputResponses[parts[2]])
	return h.await(ctx, req, h.notifier(ctx, req, s.ID, notify.Options{Thinking: r.Thinking()}), r, wait, interruptOnCancel)
}

// answer delivers a client's answer to question qid of r; an answer to a
// question that is no longer open (answered, timed out) is ignored. A
// missing or unreadable answer counts as dismissed.
func answer(r *sessions.Run, qid string, resp any) {
	for _, q := range r.Questions() {
		if q.ID != qid {
			continue
		}
		res, ok := resp.(*mcp.ElicitResult)
		if !ok {
			res = &mcp.ElicitResult{Action: "cancel"}
		}
		pr, err := permissionAnswer(q.PermissionRequest, res)
		if err != nil {
			return // the policy answers when the question times out
		}
		r.Answer(qid, pr)
		return
	}
}
