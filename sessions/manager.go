// Package sessions manages Claude Code sessions: the [Manager] facade the
// MCP layer calls (ids, create, one-shot queries, limits, shutdown), each
// [Session]'s process lifecycle, its queries and their runs bound to it
// ([Run]), budgets and idle reaping, and the manager's side of its
// subpackages. Each live Session owns one claudeagent.Process and one pump
// goroutine that feeds the running turn. It must not know MCP wire types,
// nor what its subpackages hold: the states' table (state), usage limit
// waits (limitwait), finding and starting a CLI (cli), permission answers
// (permission), turns (turn), runs (run), the history and transcript
// format (history), images, the session store and its leases (package store,
// through fleet), a list's rows (listing), the
// caps and budgets (quota), the policy's classes (policy, through
// Manager.gate), git (worktree), live places and spares (live). None of
// its subpackages imports it.
package sessions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/fleet"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/live"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/policy"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// Config configures a [Manager]. Zero values select the defaults.
type Config struct {
	// CLIPath is the claude binary; "" finds it on PATH.
	CLIPath string
	// TraceCLI (--trace-cli): the CLIs export spans of their own, so each
	// turn's trace context is handed to a running CLI before its prompt
	// (Session.retrace); with tracing off it does nothing.
	TraceCLI bool
	// OnIdle, if set, is called once each time no query, create or spare
	// start has run for a second (the server gives memory back then).
	OnIdle func()
	// OnBusy, if set, is called when a query, create or spare start begins
	// after such a quiet second, or as the first work of all: OnBusy and
	// OnIdle alternate, never at once (the server's heap is tuned for work
	// then).
	OnBusy func()
	// OnAlert, if set, is told when a turn ends or waits for a permission
	// answer (--notify, metrics), on the session's goroutines: never block.
	OnAlert func(Alert)
	// OnTakeover, if set, is told of each lapsed lease of another instance taken over here.
	OnTakeover func()
	// MaxSessions caps open sessions (live or dormant); default 64.
	MaxSessions int
	// MaxLive caps live claude processes; starting one more makes the
	// least recently used idle session dormant. Default 4.
	MaxLive int
	// MaxQueue caps the queries waiting for a live process; default 32.
	MaxQueue int
	// WarmSpares is how many option sets get a ready process (see
	// Manager.spareOn); 0 keeps none. Spares need MaxLive above 1.
	WarmSpares int
	// IdleTimeout makes a session dormant after this long without a
	// query; 0 never does.
	IdleTimeout time.Duration
	// QueryTimeout interrupts a turn that runs longer; 0 means none.
	QueryTimeout time.Duration
	// InterruptAck is how long the CLI may take to acknowledge an
	// interrupt; one that does not is stopped (SIGTERM, SIGKILL). Default
	// 2 s.
	InterruptAck time.Duration
	// InterruptGrace is how long a turn whose interrupt was acknowledged
	// may take to end before its process is killed; default 10 s.
	InterruptGrace time.Duration
	// StartTimeout bounds a process start up to its initialize answer;
	// default 60 s.
	StartTimeout time.Duration
	// PermissionPolicy answers permission questions nobody else answered:
	// "deny" (default) or "allow".
	PermissionPolicy string
	// PermissionTimeout bounds a question to the caller; default 120 s.
	PermissionTimeout time.Duration
	// UnansweredQuestions is what the model is told when nobody answers its
	// clarifying questions (AskUserQuestion): "assume" (default) to state
	// its assumptions and go on, "deny" that they cannot be answered.
	UnansweredQuestions string
	// AllowedModes restricts permission modes; nil allows all.
	AllowedModes []string
	// AllowedRoots, when set, must contain every cwd and addDir.
	AllowedRoots []string
	// NoSessionMCPServers refuses session mcpServers entries that run a
	// command (--allow-session-mcp-servers=false).
	NoSessionMCPServers bool
	// Remote marks a server whose callers are others (over HTTP): the uses
	// of options that read files, run programs or widen permissions are
	// refused unless RemoteAllow names their class (--http-allow; see
	// HTTPAllowNames), and a resume must name the caller's own conversation.
	Remote      bool
	RemoteAllow []string
	// ToolsCeiling, when non-nil, is every built-in tool a session may
	// have (--allowed-tools-ceiling); a session that names none gets these.
	ToolsCeiling []string
	// SettingSources are the CLI's own sources sessions load
	// (--setting-sources: user, project, local; empty none; nil the CLI's
	// default, all): a session may narrow them, never widen them.
	SettingSources []string
	// Kernel makes the kernel enforce the ceilings too (Landlock; see
	// policy.Gate.Ceiling).
	Kernel bool
	// Jail starts every CLI in a jail of its own (package ceiling: its own
	// processes alone in /proc, no capabilities, no other process's
	// private directory, and under "no programs" no program through the
	// loader either).
	Jail bool
	// FileCheckpoints makes every CLI keep a copy of the files its tools
	// change, per prompt, so that Session.Rewind can restore them
	// (--file-checkpoints).
	FileCheckpoints bool
	// Env is added to every CLI's environment.
	Env map[string]string
	// MaxSteerBytes bounds the messages steered into one turn, in all
	// (--max-prompt-bytes; 0 no bound beyond turn.MaxSteers).
	MaxSteerBytes int
	// UserMaxSessions, UserMaxLive and UserMaxBudgetUSD are per-user
	// quotas (over HTTP, the user of the bearer token); 0 means none.
	UserMaxSessions  int
	UserMaxLive      int
	UserMaxBudgetUSD float64
	// PerUserConfigDir, when set, gives each user's sessions the CLI config
	// directory <PerUserConfigDir>/<user> (their transcripts apart).
	PerUserConfigDir string
	// MaxSessionBudgetUSD caps what a caller may give a session as
	// maxBudgetUsd, and is the budget of a session that asks none; 0 means
	// no cap.
	MaxSessionBudgetUSD float64
	// MaxTotalBudgetUSD caps what all sessions together may cost (counted
	// from the costs the CLI reports, across restarts when persisted);
	// past it new turns are refused. 0 means no cap.
	MaxTotalBudgetUSD float64
	// MaxLimitWait is the longest a query waits for the account's usage
	// limit to reset (--max-limit-wait); a limit that resets later ends
	// the query at once. Default 6 h; negative: queries never wait.
	MaxLimitWait time.Duration
	// limitMarginSet makes limitMarginD the pause after a reset before a
	// parked query goes on (tests); default 1 s.
	limitMarginSet bool
	limitMarginD   time.Duration
	// DropAfter is how long the result of a run nobody collects is kept
	// once the turn has ended; then it is dropped and a temporary or
	// closeAfter session is closed. Default 15 min.
	DropAfter time.Duration
	// CloseStage is how long each stage of stopping a process waits
	// (stdin EOF, SIGTERM, SIGKILL); default 5 s.
	CloseStage time.Duration
	// Depth is how deeply this server is nested in claude-agent-mcp sessions
	// (CLAUDE_SUBAGENT_DEPTH); at MaxDepth or beyond, Create refuses.
	Depth, MaxDepth int
	// Store keeps sessions across restarts and shares them with other
	// instances, one record each; nil keeps them in memory.
	Store store.Store
	// StoreFailed says that sessions should survive a restart but the
	// default store could not be opened (Store is nil): PersistFailing
	// reports it, as it does a store whose writes fail.
	StoreFailed bool
	// Lease is how long a session's lease holds unrenewed (renewed every
	// third of it); 0: $CLAUDE_AGENT_MCP_LEASE (testing), else 60 s.
	Lease time.Duration
	now   func() time.Time // tests: the clock of claims and tombstones; nil is time.Now
	// ProfileEnv returns the CLI environment of a named profile; it is
	// looked up at create and at every start.
	ProfileEnv func(name string) (map[string]string, error)
	Logger     *slog.Logger
}

func (c *Config) interruptGrace() time.Duration {
	if c.InterruptGrace > 0 {
		return c.InterruptGrace
	}
	return 10 * time.Second
}

// Manager owns the sessions. Its methods are safe for concurrent use.
type Manager struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	sessions map[string]*Session
	closed   bool
	pool     *live.Pool
	spares   *live.Spares[CreateOptions]

	share  *fleet.Instance // this instance's part in the store, and the costs (share.go)
	policy *policy.Gate    // the one policy gate (see gate)
	quota  quotaLimits     // the caps on sessions and the budgets (budget.go)

	permissions permissionPolicy // answers the permission questions nobody else answered

	cli *launcher // starts the claude processes

	closing sync.WaitGroup // temporary sessions closing after their answer went out
	quiet   *quietTimer    // calls cfg.OnIdle when no query, create or spare start has run for a while, cfg.OnBusy when one begins again

	onFollowUp atomic.Pointer[func(*Run)]     // told of each follow-up's run (steer.go)
	onTurnEnd  atomic.Pointer[func(*Session)] // told of each turn's end (alert.go)
}

// NewManager returns a manager; stored sessions are loaded when asked for.
func NewManager(cfg Config) *Manager {
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 64
	}
	if cfg.MaxLive <= 0 {
		cfg.MaxLive = 4
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = 32
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	if cfg.PermissionTimeout <= 0 {
		cfg.PermissionTimeout = 120 * time.Second
	}
	if cfg.PermissionPolicy == "" {
		cfg.PermissionPolicy = "deny"
	}
	if cfg.InterruptAck <= 0 {
		cfg.InterruptAck = 2 * time.Second
	}
	if cfg.DropAfter <= 0 {
		cfg.DropAfter = 15 * time.Minute
	}
	if cfg.CloseStage <= 0 {
		cfg.CloseStage = claudeagent.DefaultCloseTimeout
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{cfg: cfg, log: logger, sessions: map[string]*Session{}, quiet: newQuiet(cfg.OnIdle, cfg.OnBusy)}
	m.policy, m.quota = newPolicy(m, cfg), newQuota(cfg)
	m.permissions = permissionPolicy{Timeout: cfg.PermissionTimeout, Answer: cfg.PermissionPolicy, Questions: cfg.UnansweredQuestions, Log: logger}
	m.cli = newLauncher(launchConfig{Path: cfg.CLIPath, Env: cfg.Env, CloseStage: cfg.CloseStage, StartTimeout: cfg.StartTimeout,
		Bypass: m.policy.BypassAvailable})
	newLive(m)
	m.share = fleet.New(fleet.Config{Store: cfg.Store, Lease: cfg.Lease, Log: logger, ErrClosed: ErrClosed, OnTakeover: cfg.OnTakeover})
	m.share.Start(storeHost{m})
	return m
}

// Config returns the manager's configuration with defaults filled in.
func (m *Manager) Config() Config { return m.cfg }

// CLI resolves the claude binary and checks its version, once.
func (m *Manager) CLI(ctx context.Context) (path, version string, err error) { return m.cli.Find(ctx) }

// Create validates opts, starts a session's process and initializes it.
// When every live process (MaxLive) is busy, the session is made without
// one (dormant): its first query starts it, waiting its turn. Its options
// are wanted for warm spares: the next create is likely alike.
func (m *Manager) Create(ctx context.Context, opts CreateOptions) (*Session, error) {
	m.quiet.Begin() // a start is work too: the quiet spell counts from its end
	defer m.quiet.End()
	s, err := m.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err = s.st.Own(ctx, state.Create); err == nil {
		err = s.ensureProcess(ctx, nil)
		s.st.Release()
	}
	if errors.Is(err, ErrTooMany) && !errors.Is(err, ErrShuttingDown) {
		// Every live process is busy: the session is made all the same and
		// starts with its first query, which waits its turn.
		s.log.Info("created without a process: every live process is busy", "max_live", m.cfg.MaxLive)
		m.persist(s, false)
		go m.spareOn(live.SessionCreated, opts)
		return s, nil
	}
	if err != nil {
		// The caller gets no session: none stays in memory or the store,
		// counted against the quotas (a failed start, a refusal, a resume
		// the CLI does not find).
		m.Discard(s)
		return nil, err
	}
	s.resetIdleTimer()
	m.persist(s, false)
	go m.spareOn(live.SessionCreated, opts)
	return s, nil
}

// Open validates opts and registers a session without starting its
// process: its first query starts it (as part of the query, so a caller
// that does not wait for the query's start does not wait for the process
// either). Used for one-shot queries.
func (m *Manager) Open(ctx context.Context, opts CreateOptions) (*Session, error) {
	if err := m.Validate(&opts); err != nil {
		return nil, err
	}
	if _, _, err := m.CLI(ctx); err != nil {
		return nil, err
	}
	s := newSession(m, opts)
	if err := m.register(ctx, s); err != nil {
		return nil, err
	}
	if opts.Worktree.On {
		name := opts.Worktree.Name
		if name == "" {
			name = "session-" + s.ID[:8]
		}
		w, err := m.makeWorktree(ctx, &opts, name)
		if err != nil {
			m.Discard(s)
			return nil, err
		}
		s.mu.Lock()
		s.worktree = w
		s.mu.Unlock()
		m.persist(s, false)
		s.log.Info("made a worktree for the session", "path", w.Path, "branch", w.Branch)
		if c := w.Copied; c != nil {
			s.log.Info("copied into the worktree the ignored files .worktreeinclude names", "copied", c.Count, "skipped", c.Skipped)
		}
		if w.ByHook {
			s.log.Info("the repository's WorktreeCreate hook made the worktree", "path", w.Path)
		}
	}
	return s, nil
}

// Get returns the open session with id. One this instance does not hold
// is loaded from the store, which other instances may share, as dormant
// (see load).
func (m *Manager) Get(id string) (*Session, error) {
	m.mu.Lock()
	s := m.sessions[id]
	m.mu.Unlock()
	if s == nil {
		return m.load(id)
	}
	return s, nil
}

// NotFoundError is the error for a session id that names no open session
// (of the caller's).
func NotFoundError(id string) error {
	return fmt.Errorf("%w: no open session has id %q; it was closed or never existed", ErrNotFound, id)
}

// List returns the open sessions held here, oldest first (see ListPage).
func (m *Manager) List() []*Session { return m.list() }

func (m *Manager) list() []*Session {
	m.mu.Lock()
	out := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		out = append(out, s)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b *Session) int { return a.created.Compare(b.created) })
	return out
}

// Count returns the number of open sessions (in the store, with one).
func (m *Manager) Count() int {
	if n, err := m.share.Count(context.Background(), ""); err == nil && m.share.Stored() {
		return n
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sessions)
}

// Close closes the session with id and returns how many remain open.
func (m *Manager) Close(id string) (int, error) {
	m.mu.Lock()
	s := m.sessions[id]
	delete(m.sessions, id)
	m.mu.Unlock()
	var err error
	switch {
	case s != nil:
		s.close()
		err = m.closeStored(s)
	case m.share.Stored():
		err = m.share.Close(context.Background(), id, "", nil)
	}
	if s == nil && (err == nil || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrClosed)) && (!m.share.Stored() || err != nil) {
		err = fmt.Errorf("%w: no open session has id %q; it was already closed or never existed", ErrNotFound, id)
	}
	return m.Count(), err
}

// closeStored closes s, closed here, in the store.
func (m *Manager) closeStored(s *Session) error {
	s.mu.Lock()
	owner, ids := s.opts.Owner, append(slices.Clone(s.pastClaudeSessionIDs), s.claudeSessionID)
	s.mu.Unlock()
	err := m.share.Close(context.Background(), s.ID, owner, ids)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrClosed) {
		return nil
	}
	return err
}

// Discard closes a temporary session and forgets it.
func (m *Manager) Discard(s *Session) {
	m.unhold(s)
	s.close()
	_ = m.closeStored(s)
}

// Shutdown stops every process, in parallel, and refuses new sessions.
// Sessions stay in the store as dormant so a restart can resume them.
func (m *Manager) Shutdown() {
	m.spares.Close()
	m.mu.Lock()
	m.closed = true // no session is added from now on
	m.pool.Close()
	m.mu.Unlock()
	all := m.list()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(func() {
			s.shutdown()
			s.saves.Wait() // its last turn's record is written before the store closes
		})
	}
	wg.Wait()
	m.closing.Wait()
	m.quiet.Stop()
	m.share.Stop() // the leases of the stopped processes are released
}

// shuttingDown reports whether Shutdown has begun. Lock order: m.mu before
// any session's mu, so never call it with a session's lock held.
func (m *Manager) shuttingDown() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// LiveCount returns how many sessions have a process.
func (m *Manager) LiveCount() int { return m.pool.Count() }

// Queued returns how many queries wait for a live process.
func (m *Manager) Queued() int { return m.pool.Queued() }

// ownerEnv is the CLI environment of an owner's sessions: with
// --per-user-config-dir, a config directory of their own (transcripts
// apart).
func (m *Manager) ownerEnv(owner string) map[string]string {
	if owner == "" || m.cfg.PerUserConfigDir == "" {
		return nil
	}
	return map[string]string{"CLAUDE_CONFIG_DIR": filepath.Join(m.cfg.PerUserConfigDir, owner)}
}

// now is the manager's clock: time.Now, or the tests' clock.
func (m *Manager) now() time.Time {
	if m.cfg.now != nil {
		return m.cfg.now()
	}
	return time.Now()
}
