package sessions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/policy"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// What reaches a running session besides a prompt: an interrupt, model
// and permission mode switches (each through the policy gate), and the
// CLI's permission questions (onControl; package permission decides).

// Interrupt interrupts the running query, if any, and reports whether one
// was running, and whether its process had to be stopped because it did
// not acknowledge the interrupt (see halt.Halt.Interrupt). The query returns with
// Interrupted set. A query waiting for a usage limit's reset (package limitwait)
// stops waiting; the CLI, which runs no turn then, is not asked.
func (s *Session) Interrupt(ctx context.Context) (running, forced bool) {
	s.mu.Lock()
	t, p, parked := s.cur, s.proc, s.limits.Parked != nil
	if parked {
		// Waiting for a usage limit's reset: no turn runs in the CLI.
		s.wakeParkedLocked()
	}
	s.mu.Unlock()
	if parked {
		return true, false
	}
	if t == nil || p == nil {
		return false, false
	}
	return true, s.halt().Interrupt(ctx, t, p)
}

// SetModel switches the model and returns the resolved id ("" when it
// cannot be known). A dormant session uses it when it resumes.
func (s *Session) SetModel(ctx context.Context, model string) (string, error) {
	if err := options.ValidateModel(model); err != nil {
		return "", err
	}
	var resolved string
	err := s.switchOption(ctx, "model", func(o *CreateOptions) { o.Model = model },
		func(p *claudeagent.Process) error { return p.SetModel(ctx, model) },
		func() { s.model = s.resolveModel(model); resolved = s.model })
	return resolved, err
}

// SetPermissionMode switches the permission mode.
func (s *Session) SetPermissionMode(ctx context.Context, mode string) error {
	if err := options.ValidatePermissionMode(mode); err != nil {
		return err
	}
	if mode == "" {
		return errors.New("permissionMode is empty: pass one of " + strings.Join(options.PermissionModes, ", "))
	}
	return s.switchOption(ctx, "permissionMode", func(o *CreateOptions) { o.PermissionMode = mode },
		func(p *claudeagent.Process) error { return p.SetPermissionMode(ctx, mode) }, nil)
}

// switchOption switches the session's option (its JSON name) as apply
// changes it: through the gate, then in the live process (send), if any,
// then in the session's options, a value the caller chose; after runs
// then too, s.mu held.
func (s *Session) switchOption(ctx context.Context, option string, apply func(o *CreateOptions), send func(*claudeagent.Process) error, after func()) error {
	if err := s.gateChange(option, apply, nil); err != nil {
		return err
	}
	s.mu.Lock()
	if err := s.usableLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	p := s.proc
	s.mu.Unlock()
	if p != nil {
		if err := s.m.fence(s); err != nil { // the claim may have passed to another instance
			return err
		}
		if err := send(p); err != nil {
			return fmt.Errorf("switching %s of session %s: %w", option, s.ID, err)
		}
	}
	s.mu.Lock()
	apply(&s.opts)
	s.opts.Operator = callerChose(s.opts.Operator, option)
	if after != nil {
		after()
	}
	s.mu.Unlock()
	s.m.persist(s, false)
	return nil
}

// gateChange checks a change of the session's options at the policy gate:
// apply makes the change of option (its JSON name; "" for none) on a copy
// of the options — a value the caller chose, no longer the operator's —
// and extra are further uses (images by path).
func (s *Session) gateChange(option string, apply func(o *CreateOptions), extra []policy.Use) error {
	s.mu.Lock()
	o := s.opts
	s.mu.Unlock()
	o.Operator = callerChose(o.Operator, option)
	if apply != nil {
		apply(&o)
	}
	_, err := s.m.gate(&o, policy.Change{Extra: extra})
	return err
}

// callerChose is operator without option: the caller chose its value.
func callerChose(operator []string, option string) []string {
	return slices.DeleteFunc(slices.Clone(operator), func(o string) bool { return o == option })
}

// onControl answers the CLI's control requests for this session.
func (s *Session) onControl(ctx context.Context, req *claudeagent.ControlRequest) (any, error) {
	if req.Subtype != "can_use_tool" {
		return nil, claudeagent.ErrUnsupportedControl
	}
	c, err := req.CanUseTool()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	t, ask, cwd, tctx := s.cur, s.curAsk, s.cwdLocked(), s.curTrace
	s.mu.Unlock()
	if ask != nil {
		s.m.alert(Alert{Session: s, Tool: c.ToolName}) // someone may answer: tell them it waits
	}
	sp := tracePermission(tctx, c.ToolName)
	res := s.m.permissions.Decide(ctx, &turn.PermissionRequest{SessionID: s.ID, Cwd: cwd, CanUseToolRequest: c}, ask)
	res = s.boundApproval(c, cwd, res)
	endPermission(sp, res)
	recordPermission(t, c, res)
	return res, nil
}

// boundApproval keeps an allow within the operator's ceilings
// (policy.Gate.Bound).
func (s *Session) boundApproval(c *claudeagent.CanUseToolRequest, cwd string, res *claudeagent.PermissionResult) *claudeagent.PermissionResult {
	s.mu.Lock()
	o := s.opts
	s.mu.Unlock()
	out, why := s.m.policy.Bound(&o, cwd, c, res)
	if why != "" {
		s.log.Info(why, "tool", c.ToolName)
	}
	return out
}
