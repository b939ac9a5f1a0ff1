package turn

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
)

// The usage limit as a turn meets it. A subscription's account can be
// refused by its usage limit: the CLI says so in a rate_limit_event
// "rejected" with the reset (resetsAt), then ends the turn with an error
// result (api_error_status 429; api_error usage_limit_reached with
// 2.1.330). The turn records the refusal and the warnings (noteLimit);
// what the query does about them — wait for the reset, send a
// continuation (Again) — is its session's.

// Limit is the account's usage limit as the CLI reported it: a refusal
// until Until, or a warning that it is near.
type Limit struct {
	Until       time.Time // when it resets; zero when the CLI did not say
	Kind        string    // the CLI's rateLimitType: five_hour, seven_day, …
	Utilization float64   // a warning's: the share of the limit used, 0..1
}

var limitNames = map[string]string{"five_hour": "the 5-hour limit", "seven_day": "the weekly limit",
	"seven_day_opus": "the weekly Opus limit", "seven_day_sonnet": "the weekly Sonnet limit", "overage": "the extra usage limit"}

func (l Limit) name() string {
	if n, ok := limitNames[l.Kind]; ok {
		return n
	}
	if l.Kind != "" {
		return "the " + l.Kind + " limit"
	}
	return "the usage limit"
}

// Describe says when a refusal ends, for a person: "limited until
// 2026-11-25T15:27:08Z (in 4m30s, the 5-hour limit)".
func (l Limit) Describe(now time.Time) string {
	return fmt.Sprintf("limited until %s (%s, %s)", l.Until.UTC().Format(time.RFC3339), untilText(l.Until, now), l.name())
}

// Warning says how near a limit is, for a person.
func (l Limit) Warning(now time.Time) string {
	msg := "usage limit warning: " + l.name()
	if l.Utilization > 0 {
		msg = fmt.Sprintf("usage limit warning: %.0f%% of %s used", l.Utilization*100, l.name())
	}
	if !l.Until.IsZero() {
		msg += fmt.Sprintf("; it resets at %s (%s)", l.Until.UTC().Format(time.RFC3339), untilText(l.Until, now))
	}
	return msg
}

func untilText(at, now time.Time) string {
	if d := at.Sub(now); d > 0 {
		return "in " + d.Round(time.Second).String()
	}
	return "now"
}

func limitFrom(info *claudeagent.RateLimitInfo) Limit {
	return Limit{Until: info.Resets(), Kind: info.RateLimitType, Utilization: info.Utilization}
}

// turnLimits is the usage limit as a query met it.
type turnLimits struct {
	rejected *Limit // a refusal with its reset, met by the latest turn
	warning  *Limit // the latest warning
	allowed  bool   // the CLI said all is well after a warning
	heldBack bool   // the prompt was never sent: the session was limited already
	why      string // why the query did not wait for the reset, or stopped waiting
}

// carried is what the turns before a continuation produced.
type carried struct {
	usage                     Usage
	cost                      float64
	durationMs, durationAPIMs int64
	numTurns                  int
}

func (c carried) addTo(r *Result) {
	r.Usage.Add(c.usage)
	r.CostUSD += c.cost
	r.DurationMs += c.durationMs
	r.DurationAPIMs += c.durationAPIMs
	r.NumTurns += c.numTurns
}

// noteLimit takes what the CLI said of the usage limit.
func (t *Turn) noteLimit(info *claudeagent.RateLimitInfo) {
	l := limitFrom(info)
	t.mu.Lock()
	switch info.Status {
	case claudeagent.RateLimitRejected:
		if !l.Until.IsZero() {
			t.limits.rejected = &l
		}
	case claudeagent.RateLimitWarning:
		t.limits.warning, t.limits.allowed = &l, false
	case claudeagent.RateLimitAllowed:
		t.limits.warning, t.limits.allowed = nil, true
	}
	now := t.now()
	t.mu.Unlock()
	if info.Status == claudeagent.RateLimitWarning {
		t.Emit(Event{Kind: EventLimitWarning, Text: l.Warning(now)})
	}
}

// limitedLocked is the usage limit t's query ended on: a refusal whose
// turn ended in an error for it, or the limit a prompt was held back for;
// nil otherwise. t.mu is held.
func (t *Turn) limitedLocked() *Limit {
	l := t.limits.rejected
	if l == nil || t.limits.heldBack {
		return l
	}
	res := t.result
	if res == nil || !res.IsError {
		return nil
	}
	if res.APIError == claudeagent.UsageLimitReached || (res.APIErrorStatus != nil && *res.APIErrorStatus == 429) {
		return l
	}
	return nil
}

// Limited is the usage limit t's query ended on (see limitedLocked).
func (t *Turn) Limited() *Limit {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.limitedLocked()
}

// limitResultLocked puts the usage limit into r: the warning as a note,
// and the limit the query ended on with what happened; t.mu is held.
func (t *Turn) limitResultLocked(r *Result) {
	now := t.now()
	if w := t.limits.warning; w != nil {
		r.LimitNote = w.Warning(now)
	}
	l := t.limitedLocked()
	if l == nil {
		return
	}
	r.LimitedUntil, r.LimitKind = l.Until, l.Kind
	msg := "usage limit reached: " + l.Describe(now)
	if t.limits.why != "" {
		msg += "; " + t.limits.why
	}
	if t.limits.heldBack {
		msg += "; the prompt was not sent"
	} else {
		msg += "; the prompt is in the conversation, and the session's next query continues from it"
		if t.result != nil && t.result.Result != "" {
			msg += " (claude said: " + t.result.Result + ")"
		}
	}
	r.IsError, r.ErrorText = true, msg
}

// WhyNot records why the query did not wait for the reset, or stopped
// waiting.
func (t *Turn) WhyNot(why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.limits.why = why
}

// Again makes t wait for the turn of a continuation: what the ended turn
// produced is carried into the query's result, whose end is now the
// continuation's. prevCost is the process's cost before the ended turn.
func (t *Turn) Again(prevCost float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if res := t.result; res != nil {
		if u := res.Usage; u != nil {
			t.carry.usage.Add(Usage{u.InputTokens, u.OutputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens})
		}
		if c := res.TotalCostUSD - prevCost; c > 0 {
			t.carry.cost += c
		}
		t.carry.durationMs += res.DurationMs
		t.carry.durationAPIMs += res.DurationAPIMs
		t.carry.numTurns += res.NumTurns
	}
	t.result, t.limits.rejected, t.limits.why = nil, nil, ""
	t.uuid = uuid.NewString()
	if t.finished {
		t.done, t.finished = make(chan struct{}), false
	}
}

// WaitReset waits d for a usage limit's reset. It reports true when the
// wait is over and the query was not interrupted meanwhile; otherwise it
// records why it stopped: cancelled (ctx; the query is then interrupted),
// interrupted, or timed out (dl).
func (t *Turn) WaitReset(ctx context.Context, d time.Duration, dl *Deadline) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		if !t.Interrupted() {
			return true
		}
		t.WhyNot("the query was interrupted while it waited")
	case <-ctx.Done():
		t.MarkInterrupted()
		t.WhyNot("the query was cancelled while it waited")
	case <-t.stopped:
		t.WhyNot("the query was interrupted while it waited")
	case <-dl.c:
		t.MarkTimedOut()
		t.WhyNot(fmt.Sprintf("the query timed out while it waited (--query-timeout %s)", dl.d))
	}
	return false
}

// LimitOutcome is what a query met of the usage limit, for its session to
// record.
type LimitOutcome struct {
	Limited   *Limit // the refusal the query ended on (see Limited); nil for none
	Why       string // why the query did not wait for the reset, or stopped waiting
	Succeeded bool   // the turn ended with a result that is no error
	Warning   *Limit // the latest warning that the limit is near
	Allowed   bool   // the CLI said all is well after a warning
}

// LimitOutcome reports what t's query met of the usage limit.
func (t *Turn) LimitOutcome() LimitOutcome {
	t.mu.Lock()
	defer t.mu.Unlock()
	return LimitOutcome{Limited: t.limitedLocked(), Why: t.limits.why, Succeeded: t.result != nil && !t.result.IsError,
		Warning: t.limits.warning, Allowed: t.limits.allowed}
}

// HoldBack records that t's prompt is held back, unsent, for the refusal
// l its session met before; Send undoes it once the prompt may go.
func (t *Turn) HoldBack(l *Limit) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.limits.rejected, t.limits.heldBack = l, true
}

// Send records that t's held-back prompt goes after all (the reset came).
func (t *Turn) Send() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.limits.rejected, t.limits.heldBack = nil, false
}

// Deadline is the end --query-timeout sets a query, from when its prompt
// goes out or it first waits for a usage limit; none when the timeout is 0.
type Deadline struct {
	d  time.Duration
	at time.Time
	t  *time.Timer
	c  <-chan time.Time // nil until armed, and without a timeout
}

// NewDeadline returns the deadline of a query timeout d, not armed yet.
func NewDeadline(d time.Duration) *Deadline { return &Deadline{d: d} }

// Arm starts the deadline, once.
func (dl *Deadline) Arm(now time.Time) {
	if dl.d > 0 && dl.t == nil {
		dl.at, dl.t = now.Add(dl.d), time.NewTimer(dl.d)
		dl.c = dl.t.C
	}
}

// Stop releases the deadline's timer.
func (dl *Deadline) Stop() {
	if dl.t != nil {
		dl.t.Stop()
	}
}

// C fires when the deadline passes; nil until armed.
func (dl *Deadline) C() <-chan time.Time { return dl.c }

// Before reports whether the deadline comes before at.
func (dl *Deadline) Before(at time.Time) bool { return dl.t != nil && dl.at.Before(at) }
