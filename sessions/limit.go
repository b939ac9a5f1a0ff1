package sessions

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
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

func (c carried) addTo(r *TurnResult) {
	r.Usage.add(c.usage)
	r.CostUSD += c.cost
	r.DurationMs += c.durationMs
	r.DurationAPIMs += c.durationAPIMs
	r.NumTurns += c.numTurns
}

// noteLimit takes what the CLI said of the usage limit.
func (t *turn) noteLimit(info *claudeagent.RateLimitInfo) {
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
		t.emit(Event{Kind: EventLimitWarning, Text: l.Warning(now)})
	}
}

// limitedLocked is the usage limit t's query ended on: a refusal whose
// turn ended in an error for it, or the limit a prompt was held back for;
// nil otherwise. t.mu is held.
func (t *turn) limitedLocked() *Limit {
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

func (t *turn) limited() *Limit {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.limitedLocked()
}

// limitResultLocked puts the usage limit into r: the warning as a note,
// and the limit the query ended on with what happened; t.mu is held.
func (t *turn) limitResultLocked(r *TurnResult) {
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

// whyNot records why the query did not wait for the reset, or stopped
// waiting.
func (t *turn) whyNot(why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.limits.why = why
}

// again makes t wait for the turn of a continuation: what the ended turn
// produced is carried into the query's result, whose end is now the
// continuation's. prevCost is the process's cost before the ended turn.
func (t *turn) again(prevCost float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if res := t.result; res != nil {
		if u := res.Usage; u != nil {
			t.carry.usage.add(Usage{u.InputTokens, u.OutputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens})
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

// limitState is what a session shows of the usage limit.
type limitState struct {
	limit        *Limit // the refusal its latest query ended on, until its reset
	limitWarning *Limit // the latest warning
	parked       *turn  // the query waiting for a reset, until it goes on
}

// noteLimitsLocked records (and logs) what t's query met of the usage
// limit; s.mu is held.
func (s *Session) noteLimitsLocked(t *turn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch l := t.limitedLocked(); {
	case l != nil:
		s.limit = l
		s.log.Warn("the account's usage limit ended the query", "until", l.Until, "limit", l.Kind, "why", t.limits.why)
	case t.result != nil && !t.result.IsError:
		s.limit = nil
	}
	switch {
	case t.limits.warning != nil:
		s.limitWarning = t.limits.warning
		s.log.Warn("the account's usage limit is near", "note", t.limits.warning.Warning(t.now()))
	case t.limits.allowed:
		s.limitWarning = nil
	}
}

// activeLimit is the refusal the session met whose reset has not come.
func (s *Session) activeLimit() *Limit {
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
		t.markInterrupted()
		if s.cur == t && s.state == StateRunning {
			s.moveLocked(StateInterrupting) // a query arriving now waits for this one's end
		}
	}
}

// holdBack parks a query whose session is limited already (an earlier
// query met the limit and its reset has not come): its prompt waits for
// the reset unsent. It reports whether the prompt may go; when not, t
// ends with the limit.
func (s *Session) holdBack(ctx context.Context, t *turn, qo QueryOptions, dl *deadline) bool {
	l := s.activeLimit()
	if l == nil {
		return true
	}
	t.mu.Lock()
	t.limits.rejected, t.limits.heldBack = l, true
	t.mu.Unlock()
	if s.park(ctx, t, *l, qo, dl) {
		s.unpark()
		t.mu.Lock()
		t.limits.rejected, t.limits.heldBack = nil, false
		t.mu.Unlock()
		return true
	}
	t.fail("")
	return false
}

// park waits, when t's query may, for the usage limit l to reset. It
// reports true when the reset has come (the session stays parked until
// the query goes on: see unpark); false when the query does not wait —
// onLimit fail, a reset beyond its --query-timeout or --max-limit-wait —
// or stopped waiting: cancelled, interrupted, timed out, its session
// closed. t records why.
func (s *Session) park(ctx context.Context, t *turn, l Limit, qo QueryOptions, dl *deadline) bool {
	now := s.m.now()
	dl.arm(now)
	wait := max(l.Until.Sub(now), 0) + s.m.cfg.limitMargin()
	longest := s.m.cfg.maxLimitWait()
	switch {
	case qo.OnLimit == OnLimitFail:
		t.whyNot("the query did not wait (onUsageLimit fail)")
		return false
	case longest < 0 || wait > longest:
		t.whyNot(fmt.Sprintf("the query did not wait: that is beyond the longest wait the server allows (--max-limit-wait %s)", max(longest, 0)))
		return false
	case dl.before(now.Add(wait)):
		t.whyNot(fmt.Sprintf("the query did not wait: that is beyond its timeout (--query-timeout %s)", s.m.cfg.QueryTimeout))
		return false
	}
	s.mu.Lock()
	closed := s.state == StateClosed
	if !closed {
		s.parked, s.limit = t, &l
	}
	s.mu.Unlock()
	if closed || t.isInterrupted() {
		t.whyNot("the query was interrupted")
		s.unpark()
		return false
	}
	t.emit(Event{Kind: EventLimited, Text: l.Describe(now), Until: l.Until, Limit: l.Kind})
	s.log.Info("usage limit reached: the query waits for the reset", "until", l.Until, "limit", l.Kind, "wait", wait)
	tm := time.NewTimer(wait)
	defer tm.Stop()
	select {
	case <-tm.C:
		if !t.isInterrupted() {
			return true
		}
		t.whyNot("the query was interrupted while it waited")
	case <-ctx.Done():
		t.markInterrupted()
		t.whyNot("the query was cancelled while it waited")
	case <-t.stopped:
		t.whyNot("the query was interrupted while it waited")
	case <-dl.c:
		t.mu.Lock()
		t.timedOut = true
		t.mu.Unlock()
		t.whyNot(fmt.Sprintf("the query timed out while it waited (--query-timeout %s)", s.m.cfg.QueryTimeout))
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
func (s *Session) afterLimits(ctx context.Context, t *turn, p *claudeagent.Process, qo QueryOptions, dl *deadline, prevCost float64) (*claudeagent.Process, float64) {
	for n := 0; ; n++ {
		l := t.limited()
		if l == nil || t.isInterrupted() {
			return p, prevCost
		}
		s.mu.Lock()
		s.limit = l // the session shows it from now on
		s.mu.Unlock()
		if n == maxLimitWaits {
			t.whyNot(fmt.Sprintf("it refused the query again after %d waits for its reset", n))
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
func (s *Session) continueAfterLimit(ctx context.Context, t *turn, qo QueryOptions, prevCost float64) (*claudeagent.Process, float64, bool) {
	s.mu.Lock()
	if res := t.result; res != nil && s.proc != nil {
		s.procCost = res.TotalCostUSD // the process's total after the refused turn
	}
	s.mu.Unlock()
	t.again(prevCost)
	p, cost, err := s.claimProcess(ctx, t, qo.AskPermission, false)
	if err != nil {
		s.unpark()
		t.fail("going on after the usage limit's reset: " + err.Error())
		return nil, 0, false
	}
	if qo.Effort != "" && s.setEffort(ctx, p, qo.Effort) != nil {
		s.log.Warn("setting the query's effort again after the usage limit's reset failed", "effort", qo.Effort)
	}
	s.mu.Lock()
	stop := t.isInterrupted()
	s.parked = nil
	s.mu.Unlock()
	if stop {
		t.fail("the query was interrupted after the usage limit's reset, before it went on")
		return p, cost, false
	}
	t.emit(Event{Kind: EventRetry, Text: "the usage limit has reset; the query goes on"})
	if err := p.SendUserID(limitContinuation, t.id()); err != nil {
		t.fail("sending the continuation to claude: " + err.Error())
		return p, cost, false
	}
	return p, cost, true
}

// deadline is the end --query-timeout sets a query, from when its prompt
// goes out or it first waits for a usage limit; none when the timeout is 0.
type deadline struct {
	d  time.Duration
	at time.Time
	t  *time.Timer
	c  <-chan time.Time // nil until armed, and without a timeout
}

// arm starts the deadline, once.
func (dl *deadline) arm(now time.Time) {
	if dl.d > 0 && dl.t == nil {
		dl.at, dl.t = now.Add(dl.d), time.NewTimer(dl.d)
		dl.c = dl.t.C
	}
}

func (dl *deadline) stop() {
	if dl.t != nil {
		dl.t.Stop()
	}
}

// before reports whether the deadline comes before at.
func (dl *deadline) before(at time.Time) bool { return dl.t != nil && dl.at.Before(at) }

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
