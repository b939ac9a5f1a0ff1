package sessions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
)

// State is where a session is in its life.
type State string

// Session states.
const (
	StateStarting State = "starting" // its process is starting
	StateIdle     State = "idle"     // live, no query running
	StateQueued   State = "queued"   // a query waits for a live process (--max-live)
	StateRunning  State = "running"  // a query is running
	StateDormant  State = "dormant"  // no process; the next query resumes it
	StateRefused  State = "refused"  // the server's policy no longer lets it run; checked again at each query
	StateFailed   State = "failed"   // it cannot be resumed
	StateClosed   State = "closed"
)

// Errors callers branch on.
var (
	ErrNotFound      = errors.New("session not found")
	ErrBusy          = errors.New("session is busy")
	ErrClosed        = errors.New("session is closed")
	ErrFailed        = errors.New("session has failed")
	ErrTooMany       = errors.New("too many sessions")
	ErrShuttingDown  = errors.New("server is shutting down")
	ErrEmptyPrompt   = errors.New("prompt is empty")
	ErrDepthExceeded = errors.New("nesting depth exceeded")
	ErrRefused       = errors.New("refused by the server's policy")
	ErrBudget        = errors.New("budget spent")
)

// CreateOptions describe a session (see options.CreateOptions).
type CreateOptions = options.CreateOptions

// QueryOptions tune one query.
type QueryOptions struct {
	IncludeThinking bool
	// Effort, when set, is this query's effort; the session's comes back
	// after the turn.
	Effort string
	// Images go with the prompt, as image content blocks.
	Images []Image
	// OnEvent receives the turn's events in order, from one goroutine, all
	// before Query returns.
	OnEvent func(Event)
	// AskPermission asks the caller about a tool call; nil (or an error)
	// applies the manager's policy.
	AskPermission func(ctx context.Context, req *PermissionRequest) (*claudeagent.PermissionResult, error)
}

// PermissionRequest is a tool call the CLI wants permission for.
type PermissionRequest struct {
	SessionID string
	Cwd       string
	*claudeagent.CanUseToolRequest
}

// Info describes a session for listing.
type Info struct {
	SessionID       string
	ClaudeSessionID string
	Cwd             string
	Model           string
	PermissionMode  string
	State           State
	Created         time.Time
	LastUsed        time.Time
	Queries         int
	Usage           Usage
	CostUSD         float64
	PID             int
	Profile         string
	Failure         string
	QueuePosition   int // while queued for a live process; 1 is next
	Temporary       bool
	Name            string
	Effort          string
	Worktree        *Worktree
	Owner           string
	AgentTool       string
}

// Session is one conversation with Claude Code. Its process may come and
// go (dormant sessions resume with --resume); its id stays.
type Session struct {
	ID  string
	m   *Manager
	log *slog.Logger

	// slot orders the process lifecycle between queries and dormancy: a
	// query holds it from before its process starts until its turn has
	// ended; making the session dormant holds it while the idle process
	// stops. Close and Shutdown stop the process without it: they mark the
	// state first (closed) or interrupt the running turn, so no query starts
	// a process behind them.
	slot chan struct{}
	// querying is the one-query-at-a-time gate: a second query is refused
	// at once instead of waiting for the slot — unless the running turn is
	// being interrupted, then it waits for that turn's end.
	querying queryGate

	// mu guards everything below; never hold it while calling a Manager
	// method that locks (lock order: Manager.mu, then Session.mu).

	mu              sync.Mutex
	opts            CreateOptions
	profileEnv      map[string]string // of opts.Profile, as of the last start
	queuePos        int               // while queued: the position, 1 is next
	procEffort      string            // the effort the live process runs with
	replay          bool              // the transcript was lost: the next prompt carries the recorded history
	everStarted     bool              // a process of this session started once
	state           State
	proc            *claudeagent.Process
	pumpDone        chan struct{}
	claudeSessionID string
	resumable       bool // a transcript exists, so --resume works
	forkPending     bool // a fork whose first turn has not run: fork again on start
	model           string
	models          []claudeagent.ModelInfo
	cur             *turn
	run             *Run // the latest run whose result may still be collected
	worktree        *Worktree
	worktreeFinal   *WorktreeInfo // what close did with the worktree
	curAsk          func(ctx context.Context, req *PermissionRequest) (*claudeagent.PermissionResult, error)
	procCost        float64 // cumulative cost the current process reported
	created         time.Time
	lastUsed        time.Time
	queries         int
	usage           Usage
	cost            float64
	failure         string
	idleTimer       *time.Timer
	history         []HistoryEntry // the newest entries, at most historyMaxBytes (history.go)
	historyBytes    int            // what history holds
	historyDropped  int            // entries dropped from history: the transcript has them

	pastClaudeSessionIDs []string // under mu: the Claude session ids it had before (see setClaudeSessionIDLocked)
}

func newSession(m *Manager, opts CreateOptions) *Session {
	id := uuid.NewString()
	now := time.Now()
	s := &Session{
		ID:       id,
		m:        m,
		log:      m.log.With("session_id", id),
		slot:     make(chan struct{}, 1),
		opts:     opts,
		state:    StateStarting,
		created:  now,
		lastUsed: now,
	}
	switch {
	case opts.ResumeSessionID != "" && !opts.ForkSession:
		s.claudeSessionID, s.resumable = opts.ResumeSessionID, true
	case opts.ResumeSessionID != "":
		// A fork gets its id up front (--session-id with --fork-session).
		s.claudeSessionID, s.resumable, s.forkPending = uuid.NewString(), true, true
	default:
		s.claudeSessionID = uuid.NewString()
	}
	if s.resumable {
		s.loadHistory()
	}
	return s
}

// loadHistory starts the history with the transcript of the conversation
// this session continues.
func (s *Session) loadHistory() {
	path := s.transcriptPath()
	h, err := loadTranscript(path)
	if err != nil {
		s.log.Warn("reading the transcript for the history", "path", path, "err", err)
	}
	s.setHistoryLocked(h)
}

// Info returns a snapshot of the session.
func (s *Session) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := Info{
		QueuePosition: s.queuePos,
		Temporary:     s.opts.Temporary,
		Name:          s.opts.Name,
		Effort:        s.opts.Effort,
		Worktree:      s.worktree,
		Owner:         s.opts.Owner,
		AgentTool:     s.opts.AgentTool,
		SessionID:     s.ID, ClaudeSessionID: s.claudeSessionID, Cwd: s.cwdLocked(), Model: s.model,
		PermissionMode: s.opts.PermissionMode, State: s.state, Created: s.created, LastUsed: s.lastUsed,
		Queries: s.queries, Usage: s.usage, CostUSD: s.cost, Profile: s.opts.Profile, Failure: s.failure,
	}
	if in.PermissionMode == "" {
		in.PermissionMode = "default"
	}
	if s.proc != nil {
		in.PID = s.proc.PID()
	}
	return in
}

// start is called with the slot held (or before the session is
// published): it starts the process and initializes it.
func (s *Session) start(ctx context.Context, t *turn) error {
	s.mu.Lock()
	if s.state == StateClosed {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrClosed, s.ID)
	}
	if s.state == StateFailed {
		f := s.failure
		s.mu.Unlock()
		return fmt.Errorf("%w: %s: %s", ErrFailed, s.ID, f)
	}
	if s.proc != nil {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()

	// Another instance sharing the registry may run the session, or have
	// run it since: claim it, taking over what that instance recorded.
	if err := s.m.claim(s); err != nil {
		s.setState(StateDormant)
		return err
	}
	s.mu.Lock()
	o := s.opts
	s.mu.Unlock()

	// The policy of today, not of the day the session was made.
	env, err := s.m.admit(&o)
	s.mu.Lock()
	if s.state == StateClosed {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrClosed, s.ID)
	}
	if err != nil {
		s.state, s.failure = StateRefused, err.Error()
		s.mu.Unlock()
		s.log.Warn("the server's policy refuses to run the session", "reason", err)
		return fmt.Errorf("%w: session %s cannot run: %w", ErrRefused, s.ID, err)
	}
	if s.worktree != nil {
		if err := s.m.checkDir("worktree", s.worktree.Cwd()); err != nil {
			s.state, s.failure = StateRefused, err.Error()
			s.mu.Unlock()
			return fmt.Errorf("%w: session %s cannot run: %w", ErrRefused, s.ID, err)
		}
	}
	s.profileEnv, s.failure = env, ""
	s.state = StateStarting
	opts := s.processOptions()
	resuming := opts.Resume != ""
	fresh := !resuming && !s.everStarted && s.worktree == nil
	s.mu.Unlock()

	// A query waits its turn for a live process; a create does not.
	queued := func(pos int) {
		s.mu.Lock()
		if s.state == StateStarting || s.state == StateQueued {
			s.state, s.queuePos = StateQueued, pos
		}
		s.mu.Unlock()
		if t != nil {
			t.emit(Event{Kind: EventQueued, Text: fmt.Sprintf("queued for a live claude process (--max-live %d): position %d", s.m.cfg.MaxLive, pos)})
		}
	}
	var p *claudeagent.Process
	var resp *claudeagent.InitializeResponse
	if fresh && s.m.sparesOn() {
		if sp := s.m.takeSpare(spareKey(opts), s); sp != nil {
			// A warm spare of the same options: its place, process and
			// Claude session id become the session's.
			s.mu.Lock()
			s.claudeSessionID = sp.sessionID
			s.mu.Unlock()
			p, resp = sp.proc, sp.resp
			opts.SessionID = sp.sessionID
			s.log.Debug("took a warm spare", "pid", p.PID())
		}
	}
	if p == nil {
		if err = s.m.makeRoomFor(s); err == nil {
			err = s.m.pool.acquire(ctx, s, t != nil, queued)
		}
	}
	s.mu.Lock()
	s.queuePos = 0
	if s.state == StateQueued {
		s.state = StateStarting
	}
	s.mu.Unlock()
	if err != nil {
		s.setState(StateDormant)
		return err
	}
	if p == nil {
		p, resp, err = s.m.startProcess(ctx, opts, s.log)
	}
	if err != nil && resuming && strings.Contains(err.Error(), "No conversation found") && s.canReplay() {
		// The CLI was killed before it wrote the transcript: start afresh,
		// and the next prompt carries the conversation as this server
		// recorded it.
		s.mu.Lock()
		lost := s.claudeSessionID
		s.setClaudeSessionIDLocked(uuid.NewString())
		s.resumable, s.forkPending, s.replay = false, false, true
		opts = s.processOptions()
		s.mu.Unlock()
		s.log.Warn("the CLI has no transcript to resume (it was killed before writing it); starting a fresh conversation seeded with the session's recorded history",
			"lost_claude_session_id", lost, "claude_session_id", opts.SessionID)
		p, resp, err = s.m.startProcess(ctx, opts, s.log)
		if err != nil {
			err = fmt.Errorf("the conversation's transcript was lost and a fresh start failed too: %w; close this session and create a new one (its history still shows what was said)", err)
			resuming = true // so the session is marked failed below
			opts.Resume = lost
		}
	}
	if err != nil {
		s.m.pool.release(s)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.state == StateClosed { // closed while starting
			return fmt.Errorf("%w: %s", ErrClosed, s.ID)
		}
		if resuming && ctx.Err() == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, claudeagent.ErrCLINotFound) {
			s.state = StateFailed
			s.failure = fmt.Sprintf("resuming Claude session %s failed: %v", opts.Resume, err)
			return fmt.Errorf("%w: %s", ErrFailed, s.failure)
		}
		s.state = StateDormant
		return err
	}
	stopping := s.m.shuttingDown() // before s.mu: the manager's lock comes first
	s.mu.Lock()
	s.proc, s.procCost, s.procEffort, s.everStarted = p, 0, opts.Effort, true
	s.pumpDone = make(chan struct{})
	s.models = resp.Models
	if s.model == "" || s.opts.Model != "" {
		requested := s.opts.Model
		if requested == "" {
			requested = s.profileEnv["ANTHROPIC_MODEL"] // a profile's model, which the CLI uses
		}
		s.model = s.resolveModel(requested)
	}
	closed := s.state == StateClosed || stopping
	if !closed {
		s.state = StateIdle
	}
	done := s.pumpDone
	s.mu.Unlock()
	go s.pump(p, done)
	if closed {
		s.stopProcess(p)
		return fmt.Errorf("%w: %s", ErrClosed, s.ID)
	}
	s.log.Info("claude process started", "pid", p.PID(), "resume", opts.Resume != "")
	return nil
}

// processOptions builds the CLI options for the next start; s.mu is held.
func (s *Session) processOptions() claudeagent.Options {
	o := s.opts
	opts := claudeagent.Options{
		SessionOptions:        o.SessionOptions,
		Cwd:                   s.cwdLocked(),
		MCPConfig:             mcpConfig(o.MCPServers, o.StrictMCPConfig),
		StrictMCPConfig:       o.StrictMCPConfig,
		Env:                   mergeEnv(subAgentEnv, s.profileEnv, s.m.ownerEnv(o.Owner), o.Env),
		PermissionPromptStdio: true,
		OnControlRequest:      s.onControl,
	}
	if opts.Tools == nil && s.m.cfg.ToolsCeiling != nil {
		opts.Tools = s.m.cfg.ToolsCeiling
	}
	if budget := s.budgetLocked(); budget > 0 {
		// The CLI counts only what its own process spends.
		opts.MaxBudgetUSD = max(math.Round((budget-s.cost)*1e6)/1e6, 0.000001)
	}
	switch {
	case s.forkPending:
		opts.Resume, opts.ForkSession, opts.SessionID = o.ResumeSessionID, true, s.claudeSessionID
	case s.resumable:
		opts.Resume = s.claudeSessionID
	default:
		opts.SessionID = s.claudeSessionID
	}
	return opts
}

func (s *Session) resolveModel(requested string) string {
	if requested == "" {
		requested = "default"
	}
	if id, ok := claudeagent.ResolveModel(s.models, requested); ok {
		return id
	}
	if requested == "default" {
		return ""
	}
	return requested
}

func (s *Session) setState(st State) {
	s.mu.Lock()
	if s.state != StateClosed && s.state != StateFailed {
		s.state = st
	}
	s.mu.Unlock()
}

// pump reads the process's messages and feeds the running turn. When the
// process ends it fails the running turn and makes the session dormant.
func (s *Session) pump(p *claudeagent.Process, done chan struct{}) {
	defer close(done)
	for {
		m, err := p.Next(context.Background())
		if err != nil {
			break
		}
		s.mu.Lock()
		t := s.cur
		s.mu.Unlock()
		if t == nil {
			s.log.Debug("message outside a query", "type", m.Type())
			continue
		}
		if t.handle(m) {
			t.finish()
		}
	}
	exitErr := p.Wait()
	s.m.pool.release(s)
	s.mu.Lock()
	t := s.cur
	if s.proc == p {
		s.proc = nil
		if s.state != StateClosed && s.state != StateFailed {
			s.state = StateDormant
		}
	}
	s.mu.Unlock()
	if t != nil {
		reason := "the claude process ended during the turn"
		if exitErr != nil {
			reason = "the claude process ended during the turn: " + exitErr.Error()
		}
		t.fail(reason)
	}
	s.log.Debug("claude process ended", "err", exitErr)
	s.m.released(s) // another instance sharing the registry may run it now
}

// enter takes the one-query gate. A query finds it taken either because
// another query runs — refused at once with ErrBusy — or because the
// running turn is being interrupted (claude_chat_interrupt, a cancelled
// call, tasks/cancel: a host such as Claude Code sends its next call
// without waiting for the cancel's answer); then it waits for that turn to
// end, at most the interrupt's acknowledgement time and the stop of a
// process that gives none.
func (s *Session) enter(ctx context.Context) error {
	busy := fmt.Errorf("%w: session %s is already running a query", ErrBusy, s.ID)
	var limit <-chan time.Time
	for !s.querying.tryAcquire() {
		if !s.querying.windingDown() {
			return busy
		}
		if limit == nil {
			t := time.NewTimer(s.m.cfg.InterruptAck + 3*time.Second)
			defer t.Stop()
			limit = t.C
		}
		select {
		case <-s.querying.released():
		case <-ctx.Done():
			return ctx.Err()
		case <-limit:
			return busy
		}
	}
	return nil
}

// Query sends prompt and waits for the end of the turn. Only one query runs
// at a time: a second one fails at once with ErrBusy. Cancelling ctx
// interrupts the turn and returns what it produced; the session survives.
// A turn that fails is a *TurnResult with IsError, not an error; errors are
// for queries that could not start.
func (s *Session) Query(ctx context.Context, prompt string, qo QueryOptions) (*TurnResult, error) {
	if prompt == "" {
		return nil, ErrEmptyPrompt
	}
	// querying is the one-query-at-a-time gate: a second query is refused
	// at once. The slot is the lock for the process's lifecycle; it may be
	// held for a moment by something else (making the session dormant), so
	// the query waits for it.
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.querying.release()
	s.m.quiet.begin()
	defer s.m.quiet.end()
	select {
	case s.slot <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() {
		<-s.slot
		s.m.pool.idle() // only now can the session give its process to a waiting query
		s.m.refillAfterTurn()
	}()

	if err := s.checkBudget(); err != nil {
		return nil, err
	}
	if qo.Effort != "" {
		if err := ValidateEffort(qo.Effort); err != nil {
			return nil, err
		}
		if err := s.gateChange("effort", func(o *CreateOptions) { o.Effort = qo.Effort }, nil); err != nil {
			return nil, err
		}
	}
	s.stopIdleTimer()
	t := newTurn(qo.OnEvent)
	p, prevCost, err := s.claim(ctx, t, qo.AskPermission)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	s.mu.Lock()
	replay := s.replay
	s.replay = false
	sent := prompt
	if replay {
		sent = replayPreamble(s.history) + prompt
	}
	s.mu.Unlock()

	// Whether the prompt goes out is decided before the turn is announced:
	// a cancellation that arrives after EventTurnStarted interrupts a sent
	// prompt, never a prompt that was silently held back.
	cancelled := ctx.Err() != nil
	t.emit(Event{Kind: EventTurnStarted})
	switch {
	case cancelled:
		t.fail("the query was cancelled before it was sent")
	case qo.Effort != "" && s.setEffort(ctx, p, qo.Effort) != nil:
		t.fail("switching the effort to " + qo.Effort + " failed; the prompt was not sent")
	default:
		if err := p.SendUserID(userContent(sent, qo.Images), t.uuid); err != nil {
			t.fail("sending the prompt to claude: " + err.Error())
		}
	}
	s.wait(ctx, t, p)
	if qo.Effort != "" {
		s.mu.Lock()
		back := s.opts.Effort
		s.mu.Unlock()
		if err := s.setEffort(context.Background(), p, back); err != nil {
			s.log.Warn("restoring the session's effort after the query", "err", err)
		}
	}

	s.mu.Lock()
	s.cur, s.curAsk = nil, nil
	if t.result != nil {
		s.procCost = t.result.TotalCostUSD
		s.forkPending = false // the fork exists now; later starts resume it
	}
	r := t.snapshot(prevCost, qo.IncludeThinking)
	if replay {
		r.Recovered = "replayed"
	}
	s.recordTurn(prompt, started, t)
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
	s.usage.InputTokens += r.Usage.InputTokens
	s.usage.OutputTokens += r.Usage.OutputTokens
	s.usage.CacheCreationInputTokens += r.Usage.CacheCreationInputTokens
	s.usage.CacheReadInputTokens += r.Usage.CacheReadInputTokens
	s.cost += r.CostUSD
	s.lastUsed = time.Now()
	if len(s.opts.JSONSchema) > 0 && !r.IsError && r.StructuredOutput == nil && !r.Interrupted {
		r.IsError = true
		r.ErrorText = "the answer is not structured output: the model answered in text instead of the form jsonSchema asks for"
	}
	if r.Subtype == "error_max_structured_output_retries" {
		r.ErrorText = "the answer did not match jsonSchema, also after the CLI asked again: " + r.ErrorText
	}
	if r.Subtype == "error_max_budget_usd" {
		r.ErrorText = fmt.Sprintf("the session's budget stopped the turn: it has cost $%s of $%s (maxBudgetUsd); %s", usd(math.Round(s.cost*1e6)/1e6), usd(s.budgetLocked()), r.ErrorText)
	}
	if s.state == StateRunning {
		s.state = StateIdle
	}
	owner := s.opts.Owner
	s.mu.Unlock()
	s.m.addSpent(owner, r.CostUSD)
	s.resetIdleTimer()
	s.m.persist()
	t.emit(Event{Kind: EventDone, IsError: r.IsError, Text: r.ErrorText})
	return r, nil
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
	var level any
	if effort != "" {
		level = effort
	}
	if err := s.m.fence(s); err != nil { // the claim may have passed to another instance
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := p.Control(ctx, "apply_flag_settings", map[string]any{"settings": map[string]any{"effortLevel": level}}); err != nil {
		return err
	}
	s.mu.Lock()
	s.procEffort = effort
	s.mu.Unlock()
	return nil
}

// cwdLocked is where the session works: its worktree, else its cwd. s.mu is
// held (or the session is not shared yet).
func (s *Session) cwdLocked() string {
	if s.worktree != nil {
		return s.worktree.Cwd()
	}
	return s.opts.Cwd
}

// hasWorktree reports whether the session runs in a worktree of its own.
func (s *Session) hasWorktree() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.worktree != nil
}

// WorktreeInfo reports the session's worktree as it is now (what close did
// with it, once closed); nil without one.
func (s *Session) WorktreeInfo(ctx context.Context) *WorktreeInfo {
	s.mu.Lock()
	w, final := s.worktree, s.worktreeFinal
	s.mu.Unlock()
	switch {
	case final != nil:
		return final
	case w != nil:
		return w.Info(ctx)
	}
	return nil
}

// usd renders an amount of dollars with the digits that matter.
func usd(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// subAgentEnv keeps a session's work inside its turns: no background tasks,
// workflows or cron jobs, whose results would come in turns the CLI starts
// by itself, after the query returned, where nobody reads them. (Agent
// sub-agents then run in the foreground and their report is part of the
// turn.) A profile or Env may override them.
var subAgentEnv = map[string]string{
	"CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1",
	"CLAUDE_CODE_DISABLE_WORKFLOWS":        "1",
	"CLAUDE_CODE_DISABLE_CRON":             "1",
}

// budgetLocked is the session's budget: its maxBudgetUsd, else the
// server's per-session ceiling; 0 for none. s.mu is held.
func (s *Session) budgetLocked() float64 {
	if s.opts.MaxBudgetUSD > 0 {
		return s.opts.MaxBudgetUSD
	}
	return s.m.cfg.MaxSessionBudgetUSD
}

// checkBudget refuses a turn when the session's budget or the server's
// total budget is spent.
func (s *Session) checkBudget() error {
	if err := s.m.checkTotalBudget(); err != nil {
		return err
	}
	if err := s.m.checkUserBudget(s.opts.Owner); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if budget := s.budgetLocked(); budget > 0 && s.cost >= budget {
		return fmt.Errorf("%w: session %s has cost $%s of its $%s budget (maxBudgetUsd); create a new session to go on", ErrBudget, s.ID, usd(math.Round(s.cost*1e6)/1e6), usd(budget))
	}
	return nil
}

// claim makes t the running turn of a live process, starting the process
// when there is none; the caller holds the slot. It returns the process and
// its cumulative cost so far.
func (s *Session) claim(ctx context.Context, t *turn, ask func(context.Context, *PermissionRequest) (*claudeagent.PermissionResult, error)) (*claudeagent.Process, float64, error) {
	for attempt := 0; attempt < 2; attempt++ {
		if err := s.start(ctx, t); err != nil {
			return nil, 0, err
		}
		if err := s.m.fence(s); err != nil { // the claim may have passed to another instance
			return nil, 0, err
		}
		s.mu.Lock()
		p, closed := s.proc, s.state == StateClosed
		if p != nil && !closed {
			// In the same critical section as the check: a process that
			// ends from now on fails t (see pump).
			s.cur, s.curAsk = t, ask
			s.state = StateRunning
			s.queries++
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

// wait blocks until the turn ends. On cancellation or the query timeout it
// interrupts the turn; a CLI that does not honour the interrupt within the
// grace period is killed.
func (s *Session) wait(ctx context.Context, t *turn, p *claudeagent.Process) {
	var timeout <-chan time.Time
	if d := s.m.cfg.QueryTimeout; d > 0 {
		tm := time.NewTimer(d)
		defer tm.Stop()
		timeout = tm.C
	}
	select {
	case <-t.done:
		return
	case <-ctx.Done():
		s.log.Info("query cancelled; interrupting the turn")
	case <-timeout:
		t.mu.Lock()
		t.timedOut = true
		t.mu.Unlock()
		s.log.Info("query timed out; interrupting the turn", "timeout", s.m.cfg.QueryTimeout)
	}
	s.abort(t, p)
}

// abort interrupts the turn and waits for it to end: a CLI that does not
// acknowledge the interrupt is stopped at once (see interrupt); one that
// acknowledges it but does not end the turn within the grace period is
// killed.
func (s *Session) abort(t *turn, p *claudeagent.Process) {
	if s.interrupt(context.Background(), t, p) {
		<-t.done
		return
	}
	grace := s.m.cfg.interruptGrace()
	tm := time.NewTimer(grace)
	defer tm.Stop()
	select {
	case <-t.done:
		return
	case <-tm.C:
	}
	s.log.Warn("claude acknowledged the interrupt but did not end the turn; killing it", "grace", grace)
	p.Kill()
	<-t.done
}

// interrupt asks the CLI to stop t's turn. A CLI that does not acknowledge
// within InterruptAck (hung, or stopped) is stopped: SIGTERM to its process
// group, SIGKILL a moment later; the turn then ends with a note saying so,
// and the session resumes on its next query. It reports whether it had to
// stop the process.
func (s *Session) interrupt(ctx context.Context, t *turn, p *claudeagent.Process) bool {
	t.markInterrupted()
	s.querying.windDown() // a query arriving now waits for this turn's end
	ack := s.m.cfg.InterruptAck
	ictx, cancel := context.WithTimeout(ctx, ack)
	err := p.Interrupt(ictx)
	cancel()
	if err == nil || errors.Is(err, claudeagent.ErrClosed) || ctx.Err() != nil {
		return false // acknowledged, or the process is gone already (the pump ends the turn)
	}
	msg := fmt.Sprintf("claude did not acknowledge the interrupt within %s, so its process was stopped (SIGTERM, then SIGKILL); the session keeps its conversation and resumes on its next query", ack)
	s.log.Warn("claude did not acknowledge the interrupt; stopping its process", "after", ack, "err", err)
	t.force(msg)
	p.Stop(500 * time.Millisecond)
	return true
}

// Interrupt interrupts the running query, if any, and reports whether one
// was running, and whether its process had to be stopped because it did
// not acknowledge the interrupt (see interrupt). The query returns with
// Interrupted set.
func (s *Session) Interrupt(ctx context.Context) (running, forced bool) {
	s.mu.Lock()
	t, p := s.cur, s.proc
	s.mu.Unlock()
	if t == nil || p == nil {
		return false, false
	}
	return true, s.interrupt(ctx, t, p)
}

// SetModel switches the model and returns the resolved id ("" when it
// cannot be known). A dormant session uses it when it resumes.
func (s *Session) SetModel(ctx context.Context, model string) (string, error) {
	if err := ValidateModel(model); err != nil {
		return "", err
	}
	if err := s.gateChange("model", func(o *CreateOptions) { o.Model = model }, nil); err != nil {
		return "", err
	}
	s.mu.Lock()
	if err := s.usableLocked(); err != nil {
		s.mu.Unlock()
		return "", err
	}
	p := s.proc
	s.mu.Unlock()
	if p != nil {
		if err := s.m.fence(s); err != nil { // the claim may have passed to another instance
			return "", err
		}
		if err := p.SetModel(ctx, model); err != nil {
			return "", fmt.Errorf("switching model of session %s: %w", s.ID, err)
		}
	}
	s.mu.Lock()
	s.opts.Model = model
	s.opts.Operator = callerChose(s.opts.Operator, "model")
	s.model = s.resolveModel(model)
	resolved := s.model
	s.mu.Unlock()
	s.m.persist()
	return resolved, nil
}

// SetPermissionMode switches the permission mode.
func (s *Session) SetPermissionMode(ctx context.Context, mode string) error {
	if err := ValidatePermissionMode(mode); err != nil {
		return err
	}
	if mode == "" {
		return errors.New("permissionMode is empty: pass one of " + strings.Join(PermissionModes, ", "))
	}
	if err := s.gateChange("permissionMode", func(o *CreateOptions) { o.PermissionMode = mode }, nil); err != nil {
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
		if err := p.SetPermissionMode(ctx, mode); err != nil {
			return fmt.Errorf("switching permission mode of session %s: %w", s.ID, err)
		}
	}
	s.mu.Lock()
	s.opts.PermissionMode = mode
	s.opts.Operator = callerChose(s.opts.Operator, "permissionMode")
	s.mu.Unlock()
	s.m.persist()
	return nil
}

// gateChange checks a change of the session's options at the policy gate:
// apply makes the change of option (its JSON name; "" for none) on a copy
// of the options — a value the caller chose, no longer the operator's —
// and extra are further uses (images by path).
func (s *Session) gateChange(option string, apply func(o *CreateOptions), extra []use) error {
	s.mu.Lock()
	o := s.opts
	s.mu.Unlock()
	o.Operator = callerChose(o.Operator, option)
	if apply != nil {
		apply(&o)
	}
	_, err := s.m.gate(&o, change{extra: extra})
	return err
}

// callerChose is operator without option: the caller chose its value.
func callerChose(operator []string, option string) []string {
	return slices.DeleteFunc(slices.Clone(operator), func(o string) bool { return o == option })
}

func (s *Session) usableLocked() error {
	switch s.state {
	case StateClosed:
		return fmt.Errorf("%w: %s", ErrClosed, s.ID)
	case StateFailed:
		return fmt.Errorf("%w: %s: %s", ErrFailed, s.ID, s.failure)
	}
	return nil
}

// close marks the session closed, interrupts a running query and stops the
// process. It returns when the process is gone.
func (s *Session) close() {
	s.mu.Lock()
	if s.state == StateClosed {
		s.mu.Unlock()
		return
	}
	s.state = StateClosed
	if s.idleTimer != nil {
		s.idleTimer.Stop()
	}
	w := s.worktree
	s.mu.Unlock()
	s.shutdown()
	if w != nil {
		in, err := w.Finish(context.Background())
		if err != nil {
			s.log.Warn("finishing the session's worktree", "err", err)
		} else if in.Removed {
			s.log.Info("removed the session's worktree: nothing changed in it", "path", w.Path)
		} else {
			s.log.Info("kept the session's worktree: it has changes", "path", w.Path, "branch", w.Branch, "changed_files", len(in.ChangedFiles))
		}
		s.mu.Lock()
		s.worktreeFinal = in
		s.mu.Unlock()
	}
}

// shutdown interrupts a running query and stops the process, leaving the
// state as it is (the pump makes a live session dormant).
func (s *Session) shutdown() {
	s.mu.Lock()
	p, t := s.proc, s.cur
	s.mu.Unlock()
	if p == nil {
		return
	}
	if t != nil {
		t.markInterrupted()
		ictx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = p.Interrupt(ictx)
		cancel()
	}
	s.stopProcess(p)
}

func (s *Session) stopProcess(p *claudeagent.Process) {
	if err := p.Close(); err != nil {
		s.log.Warn("stopping claude", "err", err)
	}
	s.mu.Lock()
	done := s.pumpDone
	s.mu.Unlock()
	if done != nil {
		<-done
	}
}

// idleSince implements holder: an idle live session can give its process
// up.
func (s *Session) idleSince() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastUsed, s.state == StateIdle && s.cur == nil && s.proc != nil
}

// evict implements holder.
func (s *Session) evict(reason string) bool { return s.makeDormant(reason) }

// makeDormant stops an idle session's process; the next query resumes it.
// It reports false when the session was busy or not live.
func (s *Session) makeDormant(reason string) bool {
	select {
	case s.slot <- struct{}{}:
	default:
		return false
	}
	defer func() { <-s.slot }()
	s.mu.Lock()
	p := s.proc
	live := p != nil && s.state == StateIdle
	s.mu.Unlock()
	if !live {
		return false
	}
	s.log.Info("making session dormant", "reason", reason)
	s.stopProcess(p)
	s.setState(StateDormant)
	return true
}

func (s *Session) stopIdleTimer() {
	s.mu.Lock()
	if s.idleTimer != nil {
		s.idleTimer.Stop()
	}
	s.mu.Unlock()
}

func (s *Session) resetIdleTimer() {
	d := s.m.cfg.IdleTimeout
	if d <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idleTimer != nil {
		s.idleTimer.Stop()
	}
	s.idleTimer = time.AfterFunc(d, func() { s.makeDormant("idle timeout") })
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
	t, ask, cwd := s.cur, s.curAsk, s.cwdLocked()
	s.mu.Unlock()
	res := s.m.decidePermission(ctx, &PermissionRequest{SessionID: s.ID, Cwd: cwd, CanUseToolRequest: c}, ask)
	if t != nil {
		if res.Behavior == "deny" {
			t.addDenial(PermissionDenial{ToolName: c.ToolName, ToolUseID: c.ToolUseID, ToolInput: c.Input})
		}
		t.emit(Event{Kind: EventPermission, Tool: c.ToolName, ToolID: c.ToolUseID, IsError: res.Behavior == "deny",
			Text: permissionSummary(c, res)})
	}
	return res, nil
}

func permissionSummary(c *claudeagent.CanUseToolRequest, res *claudeagent.PermissionResult) string {
	if res.Behavior == "deny" {
		return fmt.Sprintf("denied %s (%s): %s", c.ToolName, SummarizeInput(c.Input, 300), res.Message)
	}
	return fmt.Sprintf("allowed %s (%s)", c.ToolName, SummarizeInput(c.Input, 300))
}
