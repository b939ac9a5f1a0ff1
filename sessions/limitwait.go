// The limit waiter drives a query through the account's usage limit: a
// subscription's account can be refused by it, and the CLI says so in a
// rate_limit_event "rejected" with the reset (resetsAt), then ends the
// turn with an error result (api_error_status 429; api_error
// usage_limit_reached with 2.1.330). The query is then parked: it waits
// for the reset — as its context, --query-timeout and --max-limit-wait
// allow, and until it is interrupted or its session closes — and goes on
// by itself, or it fails at once (OnFail).
//
// What goes to the CLI after the reset follows what the CLI did with the
// prompt. A prompt whose turn ended with a result was taken: it stays in
// the CLI's conversation, and the next request carries it, merged with
// whatever is sent next (both CLIs; the fake API sees "<prompt>\n\n<next>").
// Sending it again would put it there twice, so a short continuation goes
// instead (Continuation), which makes the CLI send the conversation again.
// A prompt held back because the session was limited already (an earlier
// query met the limit) was never sent: it goes once, after the reset
// (limitWaiter.HoldBack). A warning (allowed_warning) is shown, never acted on.

package sessions

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// What a query does at the usage limit (a query's onUsageLimit).
const (
	OnWait = "wait" // the default: wait for the reset, then go on
	OnFail = "fail" // end at once, with the limit and its reset
)

// OnLimits are the accepted values of a query's onUsageLimit ("" is wait).
var OnLimits = []string{OnWait, OnFail}

// ValidateOnLimit checks a query's onUsageLimit.
func ValidateOnLimit(v string) error {
	if v == "" || slices.Contains(OnLimits, v) {
		return nil
	}
	return fmt.Errorf("onUsageLimit %q is not one of %s: wait (for the usage limit to reset, the default) or fail (at once)", v, strings.Join(OnLimits, ", "))
}

// Continuation is what resumes, after the reset, a turn that the usage
// limit cut short: the CLI still has its prompt.
const Continuation = "Continue."

// maxWaits bounds how often one query waits for a reset: a limit that
// refuses again after its reset ends the query.
const maxWaits = 4

// limitShown is what a session shows of the usage limit; the session's lock
// guards it.
type limitShown struct {
	Limit   *turn.Limit // the refusal its latest query ended on, until its reset
	Warning *turn.Limit // the latest warning
	Parked  *turn.Turn  // the query waiting for a reset, until it goes on
}

// Note records (and logs) what a query's turn met of the usage limit.
func (sh *limitShown) Note(o turn.LimitOutcome, now time.Time, log *slog.Logger) {
	switch {
	case o.Limited != nil:
		sh.Limit = o.Limited
		log.Warn("the account's usage limit ended the query", "until", o.Limited.Until, "limit", o.Limited.Kind, "why", o.Why)
	case o.Succeeded:
		sh.Limit = nil
	}
	switch {
	case o.Warning != nil:
		sh.Warning = o.Warning
		log.Warn("the account's usage limit is near", "note", o.Warning.Warning(now))
	case o.Allowed:
		sh.Warning = nil
	}
}

// Active is the refusal met whose reset has not come, or nil.
func (sh *limitShown) Active(now time.Time) *turn.Limit {
	if l := sh.Limit; l != nil && l.Until.After(now) {
		return l
	}
	return nil
}

// Info is what a listing shows: when the limit met resets and its kind,
// while that is ahead, and the latest warning's note.
func (sh *limitShown) Info(now time.Time) (until time.Time, kind, note string) {
	if l := sh.Active(now); l != nil {
		until, kind = l.Until, l.Kind
	}
	if w := sh.Warning; w != nil && (w.Until.IsZero() || w.Until.After(now)) {
		note = w.Warning(now)
	}
	return until, kind, note
}

// limitConfig is a query's part in the usage limit.
type limitConfig struct {
	OnLimit      string        // the query's onUsageLimit
	MaxWait      time.Duration // --max-limit-wait: 0 is 6 h, negative never waits
	Margin       time.Duration // the pause after a reset before the query goes on
	QueryTimeout time.Duration // --query-timeout, for the texts
	Now          func() time.Time
	Log          *slog.Logger
}

// limitWaiter takes one query through the usage limit.
type limitWaiter struct {
	s   limitQuery
	cfg limitConfig
}

// newLimitWaiter is the driver of a query on s.
func newLimitWaiter(s limitQuery, cfg limitConfig) *limitWaiter {
	if cfg.MaxWait == 0 {
		cfg.MaxWait = 6 * time.Hour
	}
	return &limitWaiter{s: s, cfg: cfg}
}

// HoldBack parks a query whose session is limited already (an earlier
// query met the limit and its reset has not come): its prompt waits for
// the reset unsent. It reports whether the prompt may go; when not, t
// ends with the limit.
func (d *limitWaiter) HoldBack(ctx context.Context, t *turn.Turn, dl *turn.Deadline) bool {
	l := d.s.Active()
	if l == nil {
		return true
	}
	t.HoldBack(l)
	if d.park(ctx, t, *l, dl) {
		d.s.Unpark()
		t.Send()
		return true
	}
	t.Fail("")
	return false
}

// park waits, when t's query may, for the usage limit l to reset. It
// reports true when the reset has come (the session stays parked until
// the query goes on); false when the query does not wait — onLimit fail,
// a reset beyond its --query-timeout or --max-limit-wait — or stopped
// waiting: cancelled, interrupted, timed out, its session closed. t
// records why.
func (d *limitWaiter) park(ctx context.Context, t *turn.Turn, l turn.Limit, dl *turn.Deadline) bool {
	now := d.cfg.Now()
	dl.Arm(now)
	wait := max(l.Until.Sub(now), 0) + d.cfg.Margin
	longest := d.cfg.MaxWait
	switch {
	case d.cfg.OnLimit == OnFail:
		t.WhyNot("the query did not wait (onUsageLimit fail)")
		return false
	case longest < 0 || wait > longest:
		t.WhyNot(fmt.Sprintf("the query did not wait: that is beyond the longest wait the server allows (--max-limit-wait %s)", max(longest, 0)))
		return false
	case dl.Before(now.Add(wait)):
		t.WhyNot(fmt.Sprintf("the query did not wait: that is beyond its timeout (--query-timeout %s)", d.cfg.QueryTimeout))
		return false
	}
	if !d.s.Park(t, l) || t.Interrupted() {
		t.WhyNot("the query was interrupted")
		d.s.Unpark()
		return false
	}
	t.Emit(turn.Event{Kind: turn.EventLimited, Text: l.Describe(now), Until: l.Until, Limit: l.Kind})
	d.cfg.Log.Info("usage limit reached: the query waits for the reset", "until", l.Until, "limit", l.Kind, "wait", wait)
	if t.WaitReset(ctx, wait, dl) {
		return true
	}
	d.s.Unpark()
	return false
}

// After goes on with t's query each time its turn ended on the usage
// limit and the query waited for the reset: a continuation goes to the
// CLI, and t waits for its turn. It returns the process the query ends on
// and that process's cost before the latest turn.
func (d *limitWaiter) After(ctx context.Context, t *turn.Turn, p *claudeagent.Process, dl *turn.Deadline, prevCost float64) (*claudeagent.Process, float64) {
	for n := 0; ; n++ {
		l := t.Limited()
		if l == nil || t.Interrupted() {
			return p, prevCost
		}
		d.s.Limited(l) // the session shows it from now on
		if n == maxWaits {
			t.WhyNot(fmt.Sprintf("it refused the query again after %d waits for its reset", n))
			return p, prevCost
		}
		if !d.park(ctx, t, *l, dl) {
			return p, prevCost
		}
		np, cost, ok := d.goOn(ctx, t, prevCost)
		if !ok {
			return np, prevCost
		}
		p, prevCost = np, cost
		d.s.Wait(ctx, t, p, dl)
	}
}

// goOn sends the continuation of a turn the usage limit cut short, on the
// session's process, unless the query was interrupted. It returns the
// process and its cost before the continuation, and whether the
// continuation went.
func (d *limitWaiter) goOn(ctx context.Context, t *turn.Turn, prevCost float64) (*claudeagent.Process, float64, bool) {
	if total, ok := t.TotalCost(); ok {
		d.s.Cost(total)
	}
	t.Again(prevCost)
	p, cost, err := d.s.Claim(ctx, t)
	if err != nil {
		d.s.Unpark()
		t.Fail("going on after the usage limit's reset: " + err.Error())
		return nil, 0, false
	}
	d.s.Unpark()
	if t.Interrupted() {
		t.Fail("the query was interrupted after the usage limit's reset, before it went on")
		return p, cost, false
	}
	t.Emit(turn.Event{Kind: turn.EventRetry, Text: "the usage limit has reset; the query goes on"})
	if err := p.SendUserID(Continuation, t.ID()); err != nil {
		t.Fail("sending the continuation to claude: " + err.Error())
		return p, cost, false
	}
	return p, cost, true
}
