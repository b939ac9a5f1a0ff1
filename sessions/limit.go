package sessions

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// Usage limits. A subscription's account can be refused by its usage
// limit: the CLI says so in a rate_limit_event "rejected" with the reset
// (resetsAt), then ends the turn with an error result (api_error_status
// 429; api_error usage_limit_reached with 2.1.330). The query is then
// parked: it waits for the reset — as its context, --query-timeout and
// --max-limit-wait allow, and until it is interrupted or its session
// closes — and goes on by itself, or it fails at once (OnLimitFail).
//
// What goes to the CLI after the reset follows what the CLI did with the
// prompt. A prompt whose turn ended with a result was taken: it stays in
// the CLI's conversation, and the next request carries it, merged with
// whatever is sent next (both CLIs; the fake API sees "<prompt>\n\n<next>").
// Sending it again would put it there twice, so a short continuation goes
// instead (limitContinuation), which makes the CLI send the conversation
// again. A prompt held back because the session was limited already (an
// earlier query met the limit) was never sent: it goes once, after the
// reset. A warning (allowed_warning) is shown, never acted on.

// Values of QueryOptions.OnLimit.
const (
	OnLimitWait = "wait" // the default: wait for the reset, then go on
	OnLimitFail = "fail" // end at once, with the limit and its reset
)

// OnLimits are the accepted values of QueryOptions.OnLimit ("" is wait).
var OnLimits = []string{OnLimitWait, OnLimitFail}

// ValidateOnLimit checks a query's onUsageLimit.
func ValidateOnLimit(v string) error {
	if v == "" || slices.Contains(OnLimits, v) {
		return nil
	}
	return fmt.Errorf("onUsageLimit %q is not one of %s: wait (for the usage limit to reset, the default) or fail (at once)", v, strings.Join(OnLimits, ", "))
}

// limitContinuation is what resumes, after the reset, a turn that the
// usage limit cut short: the CLI still has its prompt.
const limitContinuation = "Continue."

// maxLimitWaits bounds how often one query waits for a reset: a limit
// that refuses again after its reset ends the query.
const maxLimitWaits = 4

// limitState is what a session shows of the usage limit.
type limitState struct {
	limit        *turn.Limit // the refusal its latest query ended on, until its reset
	limitWarning *turn.Limit // the latest warning
	parked       *turn.Turn  // the query waiting for a reset, until it goes on
}

// noteLimitsLocked records (and logs) what t's query met of the usage
// limit; s.mu is held.
func (s *Session) noteLimitsLocked(t *turn.Turn) {
	o := t.LimitOutcome()
	switch {
	case o.Limited != nil:
		s.limit = o.Limited
		s.log.Warn("the account's usage limit ended the query", "until", o.Limited.Until, "limit", o.Limited.Kind, "why", o.Why)
	case o.Succeeded:
		s.limit = nil
	}
	switch {
	case o.Warning != nil:
		s.limitWarning = o.Warning
		s.log.Warn("the account's usage limit is near", "note", o.Warning.Warning(s.m.now()))
	case o.Allowed:
		s.limitWarning = nil
	}
}

// activeLimit is the refusal the session met whose reset has not come.
func (s *Session) activeLimit() *turn.Limit {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.limit; l != nil && l.Until.After(s.m.now()) {
		return l
	}
	return nil
}

// limitInfoLocked fills in's usage limit fields; s.mu is held.
func (s *Session) limitInfoLocked(in *Info) {
	now := s.m.now()
	if l := s.limit; l != nil && l.Until.After(now) {
		in.LimitedUntil, in.LimitKind = l.Until, l.Kind
	}
	if w := s.limitWarning; w != nil && (w.Until.IsZero() || w.Until.After(now)) {
		in.LimitNote = w.Warning(now)
	}
}

// wakeParkedLocked ends the wait of a parked query (an interrupt, the
// session's close); s.mu is held.
func (s *Session) wakeParkedLocked() {
	if t := s.parked; t != nil {
		t.MarkInterrupted()
		if s.cur == t && s.st.State() == state.Running {
			s.st.MoveLocked(state.Interrupting) // a query arriving now waits for this one's end
		}
	}
}

// holdBack parks a query whose session is limited already (an earlier
// query met the limit and its reset has not come): its prompt waits for
// the reset unsent. It reports whether the prompt may go; when not, t
// ends with the limit.
func (s *Session) holdBack(ctx context.Context, t *turn.Turn, qo QueryOptions, dl *turn.Deadline) bool {
	l := s.activeLimit()
	if l == nil {
		return true
	}
	t.HoldBack(l)
	if s.park(ctx, t, *l, qo, dl) {
		s.unpark()
		t.Send()
		return true
	}
	t.Fail("")
	return false
}

// park waits, when t's query may, for the usage limit l to reset. It
// reports true when the reset has come (the session stays parked until
// the query goes on: see unpark); false when the query does not wait —
// onLimit fail, a reset beyond its --query-timeout or --max-limit-wait —
// or stopped waiting: cancelled, interrupted, timed out, its session
// closed. t records why.
func (s *Session) park(ctx context.Context, t *turn.Turn, l turn.Limit, qo QueryOptions, dl *turn.Deadline) bool {
	now := s.m.now()
	dl.Arm(now)
	wait := max(l.Until.Sub(now), 0) + s.m.cfg.limitMargin()
	longest := s.m.cfg.maxLimitWait()
	switch {
	case qo.OnLimit == OnLimitFail:
		t.WhyNot("the query did not wait (onUsageLimit fail)")
		return false
	case longest < 0 || wait > longest:
		t.WhyNot(fmt.Sprintf("the query did not wait: that is beyond the longest wait the server allows (--max-limit-wait %s)", max(longest, 0)))
		return false
	case dl.Before(now.Add(wait)):
		t.WhyNot(fmt.Sprintf("the query did not wait: that is beyond its timeout (--query-timeout %s)", s.m.cfg.QueryTimeout))
		return false
	}
	s.mu.Lock()
	closed := s.st.State() == state.Closed
	if !closed {
		s.parked, s.limit = t, &l
	}
	s.mu.Unlock()
	if closed || t.Interrupted() {
		t.WhyNot("the query was interrupted")
		s.unpark()
		return false
	}
	t.Emit(turn.Event{Kind: turn.EventLimited, Text: l.Describe(now), Until: l.Until, Limit: l.Kind})
	s.log.Info("usage limit reached: the query waits for the reset", "until", l.Until, "limit", l.Kind, "wait", wait)
	if t.WaitReset(ctx, wait, dl) {
		return true
	}
	s.unpark()
	return false
}

// unpark ends the session's parked state.
func (s *Session) unpark() {
	s.mu.Lock()
	s.parked = nil
	s.mu.Unlock()
}

// afterLimits goes on with t's query each time its turn ended on the usage
// limit and the query waited for the reset: a continuation goes to the
// CLI, and t waits for its turn. It returns the process the query ends on
// and that process's cost before the latest turn.
func (s *Session) afterLimits(ctx context.Context, t *turn.Turn, p *claudeagent.Process, qo QueryOptions, dl *turn.Deadline, prevCost float64) (*claudeagent.Process, float64) {
	for n := 0; ; n++ {
		l := t.Limited()
		if l == nil || t.Interrupted() {
			return p, prevCost
		}
		s.mu.Lock()
		s.limit = l // the session shows it from now on
		s.mu.Unlock()
		if n == maxLimitWaits {
			t.WhyNot(fmt.Sprintf("it refused the query again after %d waits for its reset", n))
			return p, prevCost
		}
		if !s.park(ctx, t, *l, qo, dl) {
			return p, prevCost
		}
		np, cost, ok := s.continueAfterLimit(ctx, t, qo, prevCost)
		if !ok {
			return np, prevCost
		}
		p, prevCost = np, cost
		s.wait(ctx, t, p, dl)
	}
}

// continueAfterLimit sends the continuation of a turn the usage limit cut
// short, on the session's process (started again if it ended meanwhile),
// unless the query was interrupted. It returns the process and its cost
// before the continuation, and whether the continuation went.
func (s *Session) continueAfterLimit(ctx context.Context, t *turn.Turn, qo QueryOptions, prevCost float64) (*claudeagent.Process, float64, bool) {
	s.mu.Lock()
	if total, ok := t.TotalCost(); ok && s.proc != nil {
		s.procCost = total // the process's total after the refused turn
	}
	s.mu.Unlock()
	t.Again(prevCost)
	p, cost, err := s.claimProcess(ctx, t, qo.AskPermission, forContinuation)
	if err != nil {
		s.unpark()
		t.Fail("going on after the usage limit's reset: " + err.Error())
		return nil, 0, false
	}
	if qo.Effort != "" && s.setEffort(ctx, p, qo.Effort) != nil {
		s.log.Warn("setting the query's effort again after the usage limit's reset failed", "effort", qo.Effort)
	}
	s.mu.Lock()
	stop := t.Interrupted()
	s.parked = nil
	s.mu.Unlock()
	if stop {
		t.Fail("the query was interrupted after the usage limit's reset, before it went on")
		return p, cost, false
	}
	t.Emit(turn.Event{Kind: turn.EventRetry, Text: "the usage limit has reset; the query goes on"})
	if err := p.SendUserID(limitContinuation, t.ID()); err != nil {
		t.Fail("sending the continuation to claude: " + err.Error())
		return p, cost, false
	}
	return p, cost, true
}

func (c *Config) limitMargin() time.Duration {
	if c.limitMarginSet {
		return c.limitMarginD
	}
	return time.Second // the API's reset is whole seconds; its clock is not ours
}

// maxLimitWait is the longest a query waits for a reset; negative: never.
func (c *Config) maxLimitWait() time.Duration {
	if c.MaxLimitWait == 0 {
		return 6 * time.Hour
	}
	return c.MaxLimitWait
}
