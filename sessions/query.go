package sessions

import (
	"context"
	"fmt"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/images"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/live"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// A query: its admission (state.Machine.Enter), the claim of the live
// process, the prompt, the wait for the turn's end (interrupting it on
// cancellation or the query timeout), and the result recorded in the
// session.

// Query sends prompt and waits for the end of the turn. Only one query runs
// at a time: a second one fails at once with ErrBusy. Cancelling ctx
// interrupts the turn and returns what it produced; the session survives.
// A turn that fails is a *turn.Result with IsError, not an error; errors are
// for queries that could not start.
//
// The steps: enter (the query owns the session, see State), check
// (budget, effort, onLimit), hold the prompt back while the session is
// limited (package limitwait), claim the live process (starting it), send the
// prompt, wait for the turn's end — and, after a usage limit's reset, for
// the turn of its continuation —, then finish (the result and the
// session's record of it).
func (s *Session) Query(ctx context.Context, prompt string, qo QueryOptions) (res *turn.Result, err error) {
	ctx, sp := s.traceTurn(ctx, prompt)
	defer func() { endTurn(sp, res, err) }()
	if err := ValidatePrompt(prompt); err != nil {
		return nil, err
	}
	if err := ValidateOnLimit(qo.OnLimit); err != nil {
		return nil, err
	}
	busy := fmt.Errorf("%w: session %s is already running a query", ErrBusy, s.ID)
	// Behind an interrupted query: at most the interrupt's acknowledgement
	// time and the stop of a process that gives none.
	if err := s.st.Enter(ctx, busy, s.m.cfg.InterruptAck+3*time.Second); err != nil {
		return nil, err
	}
	s.m.quiet.Begin()
	defer s.m.quiet.End()
	defer func() {
		s.handOff()     // to a follow-up the turn left running (steer.go), else released
		s.m.pool.Idle() // only now can the session give its process to a waiting query
		s.m.spareOn(live.TurnEnded, CreateOptions{})
	}()

	if err := s.check(qo); err != nil {
		return nil, err
	}
	s.stopIdleTimer()
	t := turn.New(qo.OnEvent, s.m.now)
	dl := turn.NewDeadline(s.m.cfg.QueryTimeout)
	defer dl.Stop()
	started := time.Now()
	lw := s.limitDriver(qo)
	if !lw.HoldBack(ctx, t, dl) {
		return s.finish(t, turnEnd{started: started, thinking: qo.thinking()}), nil
	}
	p, prevCost, err := s.claimProcess(ctx, t, qo.AskPermission, forQuery)
	if err != nil {
		return nil, err
	}
	s.retrace(ctx, p)
	started = time.Now()
	dl.Arm(s.m.now())
	promptID := t.ID() // a continuation after a usage limit goes with another
	replay := s.send(ctx, t, p, prompt, qo)
	s.wait(ctx, t, p, dl)
	p, prevCost = lw.After(ctx, t, p, dl, prevCost)
	if qo.Effort != "" && p != nil {
		s.mu.Lock()
		back := s.opts.Effort
		s.mu.Unlock()
		if err := s.setEffort(context.Background(), p, back); err != nil {
			s.log.Warn("restoring the session's effort after the query", "err", err)
		}
	}
	return s.finish(t, turnEnd{prompt: prompt, promptID: promptID, started: started, prevCost: prevCost, replayed: replay, thinking: qo.thinking()}), nil
}

// check refuses a query the budgets do not allow, or whose effort is
// invalid or refused by the policy.
func (s *Session) check(qo QueryOptions) error {
	if err := s.checkBudget(); err != nil {
		return err
	}
	if qo.Effort == "" {
		return nil
	}
	if err := options.ValidateEffort(qo.Effort); err != nil {
		return err
	}
	return s.gateChange("effort", func(o *CreateOptions) { o.Effort = qo.Effort }, nil)
}

// send sends the prompt — after the recorded history when the transcript
// was lost (it reports whether it did) — unless the query was cancelled
// or its effort could not be set; then the turn fails.
func (s *Session) send(ctx context.Context, t *turn.Turn, p *claudeagent.Process, prompt string, qo QueryOptions) (replay bool) {
	s.mu.Lock()
	replay = s.replay
	s.replay = false
	sent := prompt
	if replay {
		sent = history.Preamble(s.history.Entries()) + prompt
	}
	s.mu.Unlock()

	// Whether the prompt goes out is decided before the turn is announced:
	// a cancellation that arrives after turn.EventTurnStarted interrupts a sent
	// prompt, never a prompt that was silently held back.
	cancelled := ctx.Err() != nil
	t.Emit(turn.Event{Kind: turn.EventTurnStarted})
	switch {
	case cancelled:
		t.Fail("the query was cancelled before it was sent")
	case qo.Effort != "" && s.setEffort(ctx, p, qo.Effort) != nil:
		t.Fail("switching the effort to " + qo.Effort + " failed; the prompt was not sent")
	default:
		if err := p.SendUserID(images.Content(sent, qo.Images), t.ID()); err != nil {
			t.Fail("sending the prompt to claude: " + err.Error())
		}
	}
	return replay
}

// turnEnd is how a query's turn came about, for finish.
type turnEnd struct {
	prompt   string    // the prompt sent; "" for one held back
	promptID string    // the uuid it was sent with
	started  time.Time // when the prompt went out
	prevCost float64   // the process's cost before the turn
	replayed bool      // the prompt carried the recorded history (a lost transcript)
	followUp bool      // the turn answers steered messages (steer.go): its prompt is in the turn before
	thinking turn.Thinking
}

// thinking is whether the query's result includes thinking.
func (qo QueryOptions) thinking() turn.Thinking {
	if qo.IncludeThinking {
		return turn.WithThinking
	}
	return turn.WithoutThinking
}

// finish builds the query's result from its ended turn and records the
// turn in the session: history (not for a prompt held back), Claude
// session id, model, usage and cost (the manager's totals too), the usage
// limit it met; the session goes idle again.
func (s *Session) finish(t *turn.Turn, end turnEnd) *turn.Result {
	s.mu.Lock()
	var traceCtx context.Context // the query's, for the store write's span
	if s.cur == t {              // else a follow-up runs (steer.go)
		traceCtx = s.curTrace
		s.cur, s.curAsk, s.curTrace = nil, nil, nil
	}
	fu := s.followUp
	if fu != nil && fu.turn == t {
		s.followUp, fu = nil, nil // this is the follow-up's end
	}
	if total, ok := t.TotalCost(); ok {
		s.procCost = total
		s.forkPending = false // the fork exists now; later starts resume it
	}
	r := t.Snapshot(end.prevCost, end.thinking)
	if end.replayed {
		r.Recovered = "replayed"
	}
	switch {
	case end.followUp:
		s.recordSteps(t)
	case end.prompt != "":
		s.recordTurn(end.prompt, end.promptID, end.started, t)
	}
	r.FollowUp = fu != nil && fu.after == t
	s.limits.Note(t.LimitOutcome(), s.m.now(), s.log)
	if u := t.LastMessage(); u != "" {
		s.lastMessage = u
	}
	if r.ClaudeSessionID != "" {
		s.setClaudeSessionIDLocked(r.ClaudeSessionID)
	} else {
		r.ClaudeSessionID = s.claudeSessionID
	}
	if r.Model != "" {
		s.model = r.Model
	} else {
		r.Model = s.model
	}
	s.usage.Add(r.Usage)
	s.cost += r.CostUSD
	s.lastUsed = time.Now()
	s.explainLocked(r)
	if fu == nil && (s.st.State() == state.Running || s.st.State() == state.Interrupting) {
		s.st.EndedLocked() // a query that comes while the turn is recorded waits for it
		if s.proc != nil {
			s.st.MoveLocked(state.Idle)
		} else {
			s.st.MoveLocked(state.Dormant) // stopped during the interrupt (see pump)
		}
	}
	s.mu.Unlock()
	s.resetIdleTimer()
	sw := traceStep(traceCtx, "claude.store_write")
	s.m.persistTurn(s, r.CostUSD)
	sw.End()
	if end.prompt != "" || end.followUp {
		s.m.alert(Alert{Session: s, Result: r, Started: end.started})
	}
	t.Emit(turn.Event{Kind: turn.EventDone, IsError: r.IsError, Text: r.ErrorText})
	return r
}

// explainLocked says in r's error text what the CLI's subtypes mean for
// this session: structured output missing or invalid, the budget spent.
// s.mu is held.
func (s *Session) explainLocked(r *turn.Result) {
	if len(s.opts.JSONSchema) > 0 && !r.IsError && r.StructuredOutput == nil && !r.Interrupted {
		r.IsError = true
		r.ErrorText = "the answer is not structured output: the model answered in text instead of the form jsonSchema asks for"
	}
	if r.Subtype == "error_max_structured_output_retries" {
		r.ErrorText = "the answer did not match jsonSchema, also after the CLI asked again: " + r.ErrorText
	}
	if r.Subtype == "error_max_budget_usd" {
		r.ErrorText = fmt.Sprintf("the session's budget stopped the turn: it has cost $%s of $%s (maxBudgetUsd); %s", cents(s.cost), usd(s.budgetLocked()), r.ErrorText)
	}
}

// claimFor says why a query claims its session's process.
type claimFor uint8

const (
	forQuery        claimFor = iota // the query's prompt: counted as a query
	forContinuation                 // the continuation after a usage limit's reset
)

// claimProcess makes t the running turn of a live process, starting the process
// when there is none; the caller owns the session. It returns the process and
// its cumulative cost so far.
// A continuation after a usage limit claims it again, not counted as a
// query.
func (s *Session) claimProcess(ctx context.Context, t *turn.Turn, ask func(context.Context, *turn.PermissionRequest) (*claudeagent.PermissionResult, error), why claimFor) (*claudeagent.Process, float64, error) {
	for attempt := 0; attempt < 2; attempt++ {
		if err := s.ensureProcess(ctx, t); err != nil {
			return nil, 0, err
		}
		if err := s.m.fence(s); err != nil { // the claim may have passed to another instance
			return nil, 0, err
		}
		s.mu.Lock()
		p, closed := s.proc, s.st.State() == state.Closed
		if p != nil && !closed {
			// In the same critical section as the check: a process that
			// ends from now on fails t (see pump).
			s.cur, s.curAsk = t, ask
			s.curTrace = traced(ctx)
			s.st.MoveLocked(state.Running)
			if why == forQuery {
				s.queries++
			}
			s.lastUsed = time.Now()
			s.resumable = true // from now on the CLI has (or will have) a transcript
			prevCost := s.procCost
			s.mu.Unlock()
			return p, prevCost, nil
		}
		s.mu.Unlock()
		if closed {
			break
		}
		// The idle process died just now; start it again (with --resume).
	}
	return nil, 0, fmt.Errorf("%w: %s", ErrClosed, s.ID)
}

// setEffort switches the effort of the running process when effort differs
// from what it runs with ("" is the model's default); the CLI takes it
// without a restart (control request apply_flag_settings).
func (s *Session) setEffort(ctx context.Context, p *claudeagent.Process, effort string) error {
	s.mu.Lock()
	cur := s.procEffort
	s.mu.Unlock()
	if effort == cur {
		return nil
	}
	if err := s.m.fence(s); err != nil { // the claim may have passed to another instance
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.SetEffort(ctx, effort); err != nil {
		return err
	}
	s.mu.Lock()
	s.procEffort = effort
	s.mu.Unlock()
	return nil
}

// wait blocks until the turn ends. On cancellation or the query's
// deadline (--query-timeout) it interrupts the turn; a CLI that does not
// honour the interrupt within the grace period is killed.
func (s *Session) wait(ctx context.Context, t *turn.Turn, p *claudeagent.Process, dl *turn.Deadline) {
	select {
	case <-t.Done():
		return
	case <-ctx.Done():
		s.log.Info("query cancelled; interrupting the turn")
	case <-dl.C():
		t.MarkTimedOut()
		s.log.Info("query timed out; interrupting the turn", "timeout", s.m.cfg.QueryTimeout)
	}
	s.halt().Abort(t, p)
}

// halt is how s stops its turns (package halt); a turn it interrupts
// makes the running session interrupting.
func (s *Session) halt() halter {
	return halter{Ack: s.m.cfg.InterruptAck, Grace: s.m.cfg.interruptGrace(), Log: s.log, Interrupting: func(t *turn.Turn) {
		s.mu.Lock()
		if s.cur == t && s.st.State() == state.Running {
			s.st.MoveLocked(state.Interrupting) // a query arriving now waits for this turn's end
		}
		s.mu.Unlock()
	}}
}
