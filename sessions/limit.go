package sessions

import (
	"context"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// The session's side of the usage limit (the limit waiter, limitwait.go,
// drives a query through it): what the session shows of it
// (Session.limits, under s.mu), and the query as the waiter sees it,
// limitQuery.

// limitDriver is the driver of the query qo on s.
func (s *Session) limitDriver(qo QueryOptions) *limitWaiter {
	c := &s.m.cfg
	return newLimitWaiter(limitQuery{s, qo}, limitConfig{OnLimit: qo.OnLimit, MaxWait: c.MaxLimitWait,
		Margin: c.limitMargin(), QueryTimeout: c.QueryTimeout, Now: s.m.now, Log: s.log})
}

// limitQuery is a query of s as limitwait's driver sees it.
type limitQuery struct {
	s  *Session
	qo QueryOptions
}

func (q limitQuery) Active() *turn.Limit {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	return q.s.limits.Active(q.s.m.now())
}

func (q limitQuery) Park(t *turn.Turn, l turn.Limit) bool {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	if q.s.st.State() == state.Closed {
		return false
	}
	q.s.limits.Parked, q.s.limits.Limit = t, &l
	return true
}

func (q limitQuery) Unpark() {
	q.s.mu.Lock()
	q.s.limits.Parked = nil
	q.s.mu.Unlock()
}

func (q limitQuery) Limited(l *turn.Limit) {
	q.s.mu.Lock()
	q.s.limits.Limit = l
	q.s.mu.Unlock()
}

func (q limitQuery) Cost(total float64) {
	q.s.mu.Lock()
	if q.s.proc != nil {
		q.s.procCost = total // the process's total after the refused turn
	}
	q.s.mu.Unlock()
}

func (q limitQuery) Claim(ctx context.Context, t *turn.Turn) (*claudeagent.Process, float64, error) {
	s, effort := q.s, q.qo.Effort
	p, cost, err := s.claimProcess(ctx, t, q.qo.AskPermission, forContinuation)
	if err == nil && effort != "" && s.setEffort(ctx, p, effort) != nil {
		s.log.Warn("setting the query's effort again after the usage limit's reset failed", "effort", effort)
	}
	return p, cost, err
}

func (q limitQuery) Wait(ctx context.Context, t *turn.Turn, p *claudeagent.Process, dl *turn.Deadline) {
	q.s.wait(ctx, t, p, dl)
}

// wakeParkedLocked ends the wait of a parked query (an interrupt, the
// session's close); s.mu is held.
func (s *Session) wakeParkedLocked() {
	if t := s.limits.Parked; t != nil {
		t.MarkInterrupted()
		if s.cur == t && s.st.State() == state.Running {
			s.st.MoveLocked(state.Interrupting) // a query arriving now waits for this one's end
		}
	}
}

func (c *Config) limitMargin() time.Duration {
	if c.limitMarginSet {
		return c.limitMarginD
	}
	return time.Second // the API's reset is whole seconds; its clock is not ours
}
