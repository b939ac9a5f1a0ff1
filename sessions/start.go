package sessions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/beneath"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/tracing"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/live"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// Starting a session's process (Session.ensureProcess and its steps) and the
// options and environment it runs with.

// ensureProcess starts the session's process and initializes it, unless it has
// one; t is the query that waits for it (nil for a create). Its caller
// owns the session (see State). The steps:
// startable, the store's lease, admitStart (the policy of today),
// a live place (a warm spare, or the pool, queueing for a query),
// launch (with the fallback for a lost transcript), then started or
// startFailed.
func (s *Session) ensureProcess(ctx context.Context, t *turn.Turn) error {
	if live, err := s.startable(); live || err != nil {
		return err
	}
	// Another instance sharing the store may run the session, or have
	// run it since: claim it, taking over what that instance recorded.
	if err := s.m.claimLease(ctx, s); err != nil {
		s.st.Move(state.Dormant)
		return err
	}
	opts, fresh, err := s.admitStart()
	if err != nil {
		s.m.share.Release(s.ID) // a lease goes with a process
		return err
	}
	var sp *live.Spare
	var resp *claudeagent.InitializeResponse
	if fresh {
		claim := traceStart()
		if sp, resp = s.takeSpare(opts); sp != nil {
			traceSpare(ctx, claim, sp.Process().PID())
		}
	}
	if sp != nil { // its place became the session's
		opts.SessionID = sp.SessionID()
		if opts.Name != "" {
			go s.nameSpare(sp.Process(), opts.Name)
		}
		return s.started(sp.Process(), resp, opts)
	}
	if err := s.place(ctx, t); err != nil {
		s.st.Move(state.Dormant)
		s.m.share.Release(s.ID) // a lease goes with a process
		return err
	}
	// The CLI continues the query's trace (the claude.turn span; a
	// create's call), read from its environment once: later turns of the
	// process stay in this trace (docs/tracing.md).
	opts.Env = withTrace(opts.Env, ctx)
	pctx, ps := tracing.Start(ctx, "claude.process_start")
	proc, resp, opts, err := s.launch(pctx, opts)
	endStart(ps, proc, opts, err)
	if err != nil {
		return s.startFailed(ctx, err, opts.Resume)
	}
	return s.started(proc, resp, opts)
}

// startable reports whether the session is live already; an error when
// it cannot start at all (closed, failed).
func (s *Session) startable() (live bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableLocked(); err != nil {
		return false, err
	}
	return s.proc != nil, nil
}

// admitStart checks the session against the policy of today, not of the
// day it was made (and its worktree against the allowed roots), and
// returns the options of its process; fresh when a warm spare may serve
// it (no conversation to resume, never started, no worktree).
func (s *Session) admitStart() (opts claudeagent.Options, fresh bool, err error) {
	s.mu.Lock()
	o := s.opts
	s.mu.Unlock()
	env, err := s.m.admit(&o)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.State() == state.Closed {
		return opts, false, fmt.Errorf("%w: %s", ErrClosed, s.ID)
	}
	if err != nil {
		s.log.Warn("the server's policy refuses to run the session", "reason", err)
	} else if s.worktree != nil {
		err = s.m.checkDir("worktree", s.worktree.Cwd())
	}
	if err != nil {
		s.st.MoveLocked(state.Refused)
		s.failure = err.Error()
		return opts, false, fmt.Errorf("%w: session %s cannot run: %w", ErrRefused, s.ID, err)
	}
	s.profileEnv, s.failure = env, ""
	s.st.MoveLocked(state.Starting)
	opts = s.processOptions()
	fresh = opts.Resume == "" && !s.everStarted && s.worktree == nil
	return opts, fresh, nil
}

// takeSpare takes a warm spare of the same options for a fresh session:
// its place, process and Claude session id become the session's, and
// the session answers its control requests. When a new spare starts
// behind it is spareOn's (a created session's at once, a one-shot's when
// its turn is over).
func (s *Session) takeSpare(opts claudeagent.Options) (*live.Spare, *claudeagent.InitializeResponse) {
	if !s.m.sparesOn() {
		return nil, nil
	}
	sp := s.m.spares.Take(live.SpareKey(opts), s.holder(), s.onControl)
	if sp == nil {
		return nil, nil
	}
	s.mu.Lock()
	took := live.CreateTookSpare
	if s.oneShot || s.opts.Temporary {
		took = live.OneShotTookSpare
	}
	s.claudeSessionID = sp.SessionID()
	s.mu.Unlock()
	s.m.spareOn(took, CreateOptions{})
	s.log.Debug("took a warm spare", "pid", sp.Process().PID())
	return sp, sp.Initialized()
}

// nameSpare gives the spare's process the session's name, which a spare
// starts without (live.SpareKey), as --name would have. The create does not
// wait for it (the round trip to the CLI, which writes the name into its
// transcript, cost 10 ms of a 15 ms create); a failed rename costs the
// display name only.
func (s *Session) nameSpare(p *claudeagent.Process, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), s.m.cfg.StartTimeout)
	defer cancel()
	if err := p.Rename(ctx, name); err != nil {
		s.log.Warn("the warm spare did not take the session's name", "err", err)
	}
}

// place gets the session a live place from the pool, within the owner's
// --user-max-live (the pool's UserMax: the owner's least recently used
// idle session goes dormant, or the start is refused when all are busy). A
// query (t set) waits its turn in the pool's queue; a create does not.
func (s *Session) place(ctx context.Context, t *turn.Turn) error {
	queued := func(pos int) {
		s.mu.Lock()
		if s.st.State() == state.Starting || s.st.State() == state.Queued {
			s.st.MoveLocked(state.Queued)
			s.queuePos = pos
		}
		s.mu.Unlock()
		t.Emit(turn.Event{Kind: turn.EventQueued, Text: fmt.Sprintf("queued for a live claude process (--max-live %d): position %d", s.m.cfg.MaxLive, pos)})
	}
	var err error
	if t != nil { // a query waits its turn
		sp := traceStep(ctx, "claude.queue_wait")
		err = s.m.pool.Acquire(ctx, s.holder(), queued)
		sp.End()
	} else {
		err = s.m.pool.AcquireNow(s.holder())
	}
	s.mu.Lock()
	s.queuePos = 0
	if s.st.State() == state.Queued {
		s.st.MoveLocked(state.Starting)
	}
	s.mu.Unlock()
	return err
}

// launch starts the process. When the CLI has no transcript to resume (it
// was killed before writing it), it starts afresh, and the next prompt
// carries the conversation as this server recorded it; opts are the
// options of the start that counts.
func (s *Session) launch(ctx context.Context, opts claudeagent.Options) (*claudeagent.Process, *claudeagent.InitializeResponse, claudeagent.Options, error) {
	s.projectAlone(&opts)
	p, resp, err := s.m.cli.Start(ctx, opts, s.log)
	if err == nil || opts.Resume == "" || !strings.Contains(err.Error(), "No conversation found") || !s.canReplay() {
		return p, resp, opts, err
	}
	s.mu.Lock()
	lost := s.claudeSessionID
	s.setClaudeSessionIDLocked(uuid.NewString())
	s.resumable, s.forkPending, s.replay = false, false, true
	env := opts.Env // with the trace context (ensureProcess)
	opts = s.processOptions()
	opts.Env = env
	s.mu.Unlock()
	s.projectAlone(&opts)
	s.log.Warn("the CLI has no transcript to resume (it was killed before writing it); starting a fresh conversation seeded with the session's recorded history",
		"lost_claude_session_id", lost, "claude_session_id", opts.SessionID)
	p, resp, err = s.m.cli.Start(ctx, opts, s.log)
	if err != nil {
		err = fmt.Errorf("the conversation's transcript was lost and a fresh start failed too: %w; close this session and create a new one (its history still shows what was said)", err)
		opts.Resume = lost // so the session is marked failed
	}
	return p, resp, opts, err
}

// projectAlone makes a jailed process see its own project's directory of
// transcripts alone in its CLI config directory's projects/ (the CLI keeps
// a project's sessions together; the other projects' transcripts are
// hidden), and with file checkpoints its own conversation's copies alone
// in file-history/. The directories are made beneath the config directory
// without following a link; one the session planted leaves the others in
// view, and says so.
func (s *Session) projectAlone(opts *claudeagent.Options) {
	s.mu.Lock()
	t := s.transcriptPathFor("-")
	s.mu.Unlock()
	viewAlone(opts, t, s.log, s.inheritCopies)
}

// viewAlone is projectAlone for a process whose transcripts would be
// named by t (a transcript's path in its project's directory); inherit
// copies a fork's parent's checkpoints (nil: none to copy).
func viewAlone(opts *claudeagent.Options, t beneath.Path, log *slog.Logger, inherit func(configDir, parent, fork string)) {
	if !opts.Jail || t.IsZero() {
		return
	}
	project := beneath.Path{Dir: t.Dir, Rel: filepath.Dir(t.Rel)}
	if err := beneath.MkdirAll(project); err != nil {
		log.Warn("the session's project directory of transcripts cannot be made; the other projects' stay in its view", "err", err)
	} else {
		opts.Alone = append(opts.Alone, project.String())
	}
	if !opts.FileCheckpoints {
		return
	}
	// The copies of the files a conversation changed (file checkpoints):
	// another session's it could read, or change so that that session's
	// rewind restores what it wrote. A fork gets a copy of its parent's,
	// which its CLI would link itself.
	id := opts.SessionID // a fresh conversation's, or a fork's
	if id == "" {
		id = opts.Resume
	}
	copies := beneath.Path{Dir: t.Dir, Rel: filepath.Join("file-history", id)}
	if err := beneath.MkdirAll(copies); err != nil {
		log.Warn("the session's directory of file checkpoints cannot be made; the other sessions' stay in its view", "err", err)
		return
	}
	if opts.ForkSession && opts.Resume != "" && inherit != nil {
		inherit(t.Dir, opts.Resume, id)
	}
	opts.Alone = append(opts.Alone, copies.String())
}

// startFailed gives the live place back and leaves the session dormant,
// or failed when resuming the conversation resume ("" for none) failed for
// a reason a retry does not mend.
func (s *Session) startFailed(ctx context.Context, err error, resume string) error {
	s.m.pool.Release(s.holder())
	s.m.share.Release(s.ID) // a lease goes with a process
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.State() == state.Closed { // closed while starting
		return fmt.Errorf("%w: %s", ErrClosed, s.ID)
	}
	if resume != "" && ctx.Err() == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, claudeagent.ErrCLINotFound) {
		s.st.MoveLocked(state.Failed)
		s.failure = fmt.Sprintf("resuming Claude session %s failed: %v", resume, err)
		return fmt.Errorf("%w: %s", ErrFailed, s.failure)
	}
	s.st.MoveLocked(state.Dormant)
	return err
}

// started makes p the session's process and starts its pump; a session
// closed meanwhile (or a manager shutting down) stops it again.
func (s *Session) started(p *claudeagent.Process, resp *claudeagent.InitializeResponse, opts claudeagent.Options) error {
	stopping := s.m.shuttingDown() // before s.mu: the manager's lock comes first
	s.mu.Lock()
	s.proc, s.procCost, s.procEffort, s.everStarted = p, 0, opts.Effort, true
	p.KeepPartials(s.textFollowers > 0)
	s.pumpDone = make(chan struct{})
	s.models = resp.Models
	if s.model == "" || s.opts.Model != "" {
		requested := s.opts.Model
		if requested == "" {
			requested = s.profileEnv["ANTHROPIC_MODEL"] // a profile's model, which the CLI uses
		}
		s.model = s.resolveModel(requested)
	}
	closed := s.st.State() == state.Closed || stopping
	if !closed {
		s.st.MoveLocked(state.Idle)
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
		MCPConfig:             options.MCPConfig(&o),
		StrictMCPConfig:       o.StrictMCPConfig,
		Env:                   mergeEnv(subAgentEnv, s.profileEnv, s.m.ownerEnv(o.Owner), o.Env),
		PermissionPromptStdio: true,
		// Text deltas, dropped undecoded unless someone follows the text
		// (FollowText).
		IncludePartialMessages: true,
		OnControlRequest:       s.onControl,
		Ceiling:                s.m.policy.Ceiling(&o, s.cwdLocked()),
		Jail:                   s.m.cfg.Jail,
		FileCheckpoints:        s.m.cfg.FileCheckpoints,
	}
	opts.SettingSources = s.m.policy.SettingSources(&o)
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
