package mcptools

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/images"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// agentCore is what an agent tool's call needs of the tool core: a query
// launched and waited for exactly as claude_chat_query's, whose results
// and errors come as that tool's.
type agentCore struct{ h *handlers }

func (c agentCore) QueryWait(prompt string, waitSeconds int) (time.Duration, error) {
	return c.h.queryArgs(prompt, waitSeconds)
}

func (c agentCore) Retried(ctx context.Context, req *mcp.CallToolRequest, wait time.Duration) (*mcp.CallToolResult, error) {
	return encoded(c.h.retried(ctx, req, wait, true))
}

func (c agentCore) Session(ctx context.Context, id string) (*sessions.Session, error) {
	s, err := c.h.session(ctx, id)
	if err != nil && !errors.Is(err, sessions.ErrNotFound) {
		return nil, toolError(err)
	}
	return s, err
}

func (c agentCore) OneShot(ctx context.Context, opts sessions.CreateOptions, images []images.Input) (*sessions.Session, []images.Image, error) {
	owned(ctx, &opts)
	s, imgs, err := c.h.mgr.OneShot(ctx, opts, images)
	if err != nil {
		return nil, nil, toolError(err)
	}
	return s, imgs, nil
}

func (c agentCore) Launch(ctx context.Context, req *mcp.CallToolRequest, s *sessions.Session, prompt string, ro sessions.QueryOptions, wait time.Duration) (*mcp.CallToolResult, error) {
	return encoded(c.h.launch(ctx, req, s, prompt, ro, wait))
}

func (c agentCore) Discard(s *sessions.Session) { c.h.mgr.Discard(s) }

func (c agentCore) OutputSchema() *jsonschema.Schema {
	out := mustSchema[QueryOutput]()
	shape(out, outputKeys[reflect.TypeFor[QueryOutput]()])
	return out
}

// agentOnly refuses a tool other than the agent tool that started s: the
// agent tools' overrides may only tighten, and tool (claude_chat_query,
// claude_chat_mode, claude_chat_model) could widen.
func agentOnly(s *sessions.Session, tool string) error {
	if by := s.Info().AgentTool; by != "" {
		return fmt.Errorf("session %s was started by the agent tool %s, and only that tool continues it (its overrides may only tighten the agent's session), so %s does not take it: call %s with this sessionId and a prompt", s.ID, by, tool, by)
	}
	return nil
}
