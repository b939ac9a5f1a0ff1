package mcptools

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// On protocol 2026-07-28 a server cannot send elicitation/create while it
// serves a call; it returns the question in the result (InputRequests, SEP
// 2322) and the client calls the tool again with the answer. The query
// keeps running meanwhile, so a permission question becomes: the call
// returns the question; the retried call delivers the answer and waits on.

// modernEra reports whether the call uses the stateless protocol.
func modernEra(req *mcp.CallToolRequest) bool {
	return req != nil && req.ProtocolVersion() >= "2026-07-28"
}

// question is a permission question waiting for a retried call.
type question struct {
	id     string
	params *mcp.ElicitParams
	answer chan *mcp.ElicitResult
}

// questionAsker returns the AskPermission of a run on the modern protocol:
// it queues the question for the call that waits on the run and blocks
// until the retried call answers it or ctx ends.
func questionAsker(r *run) func(context.Context, *sessions.PermissionRequest) (*claudeagent.PermissionResult, error) {
	return func(ctx context.Context, pr *sessions.PermissionRequest) (*claudeagent.PermissionResult, error) {
		q := &question{
			id:     "permission-" + uuid.NewString(),
			params: &mcp.ElicitParams{Mode: "form", Message: permissionMessage(pr), RequestedSchema: permissionSchema},
			answer: make(chan *mcp.ElicitResult, 1),
		}
		r.mu.Lock()
		r.questions[q.id] = q
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			delete(r.questions, q.id)
			r.mu.Unlock()
		}()
		select {
		case r.asked <- struct{}{}:
		default:
		}
		select {
		case res := <-q.answer:
			return permissionAnswer(pr, res)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// nextQuestion returns an unanswered question of r, if any.
func (r *run) nextQuestion() *question {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, q := range r.questions {
		return q
	}
	return nil
}

// inputRequired ends a call with the question q; the client answers it and
// calls the tool again with RequestState.
func (h *handlers) inputRequired(r *run, q *question) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{q.id: q.params},
		RequestState:  h.signState(r.sessionID + "|" + q.id),
	}
}

// resumeCall handles a retried call: it delivers the answers to the run's
// questions and returns the run to wait on.
func (h *handlers) resumeCall(req *mcp.CallToolRequest) (*run, error) {
	state, err := h.verifyState(req.Params.RequestState)
	if err != nil {
		return nil, err
	}
	sessionID, qid, _ := strings.Cut(state, "|")
	h.mu.Lock()
	r := h.runs[sessionID]
	h.mu.Unlock()
	if r == nil {
		return nil, fmt.Errorf("the query of session %s that asked for permission is no longer running", sessionID)
	}
	r.mu.Lock()
	q := r.questions[qid]
	delete(r.questions, qid) // answered: never ask it again
	r.mu.Unlock()
	if q == nil {
		return r, nil // answered already (or timed out): just wait on
	}
	res, ok := req.Params.InputResponses[qid].(*mcp.ElicitResult)
	if !ok {
		res = &mcp.ElicitResult{Action: "cancel"}
	}
	select {
	case q.answer <- res:
	default:
	}
	return r, nil
}

func (h *handlers) signState(s string) string {
	mac := hmac.New(sha256.New, h.stateKey)
	mac.Write([]byte(s))
	return base64.RawURLEncoding.EncodeToString([]byte(s)) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func (h *handlers) verifyState(token string) (string, error) {
	body, sig, ok := strings.Cut(token, ".")
	raw, err1 := base64.RawURLEncoding.DecodeString(body)
	got, err2 := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err1 != nil || err2 != nil {
		return "", errors.New("invalid requestState: it must be echoed unchanged from this server's input-required result")
	}
	mac := hmac.New(sha256.New, h.stateKey)
	mac.Write(raw)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return "", errors.New("invalid requestState: it was not issued by this server (or the server restarted)")
	}
	return string(raw), nil
}

func newStateKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}
