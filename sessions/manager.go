// Package sessions manages Claude Code sessions: ids, process lifecycle,
// one query at a time per session (a second is refused as busy), the live
// pool and its queue, warm spares, the policy gate, limits, idle reaping,
// the registry shared by instances, and the aggregation of a turn's
// messages into a result. It knows nothing about MCP wire types.
//
// A [Manager] owns its sessions. Each live [Session] owns one
// claudeagent.Process and one pump goroutine that feeds the running turn.
package sessions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// Config configures a [Manager]. Zero values select the defaults.
type Config struct {
	// CLIPath is the claude binary; "" finds it on PATH.
	CLIPath string
	// OnIdle, if set, is called once each time no query, create or spare
	// start has run for a second after the last one ended (the server
	// gives memory back to the system then).
	OnIdle func()
	// MaxSessions caps open sessions (live or dormant); default 64.
	MaxSessions int
	// MaxLive caps live claude processes; starting one more makes the
	// least recently used idle session dormant. Default 4.
	MaxLive int
	// MaxQueue caps the queries waiting for a live process; default 32.
	MaxQueue int
	// WarmSpares is how many option sets get a ready process (see
	// WantSpares); 0 keeps none. Spares need MaxLive above 1.
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
	// Env is added to every CLI's environment.
	Env map[string]string
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
	// DropAfter is how long the result of a run nobody collects is kept
	// once the turn has ended; then it is dropped and a temporary or
	// closeAfter session is closed. Default 15 min.
	DropAfter time.Duration
	// CloseStage is how long each stage of stopping a process waits
	// (stdin EOF, SIGTERM, SIGKILL); default 5 s.
	CloseStage time.Duration
	// Depth is how deeply this server is nested in claude-agent-mcp sessions
	// (CLAUDE_AGENT_MCP_DEPTH); at MaxDepth or beyond, Create refuses.
	Depth, MaxDepth int
	// Registry persists sessions across restarts; nil keeps them in memory.
	Registry *Registry
	// Lease is how long a claim on a session in a shared registry holds
	// without renewal (it is renewed every third of it); 0 means
	// $CLAUDE_AGENT_MCP_LEASE (a testing knob), else 60 s.
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
	pool     *livePool
	spares   spareState

	persistMu  sync.Mutex
	persistErr error              // of the last registry write
	spent      float64            // what every turn has cost, also of closed sessions (and before a restart, and on other instances sharing the registry as of the last merge)
	userSpent  map[string]float64 // likewise per owner
	share      shareState         // sharing the registry with other instances (share.go)
	store      store.Store        // the registry (cfg.Registry), nil for none

	cliMu      sync.Mutex
	cliPath    string
	cliVersion string

	closing sync.WaitGroup // temporary sessions closing after their answer went out
	quiet   quiet          // calls cfg.OnIdle when no query has run for a while
}

// NewManager returns a manager. When cfg.Registry is set, the sessions it
// holds are restored as dormant.
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
	m := &Manager{cfg: cfg, log: logger, sessions: map[string]*Session{}, pool: newLivePool(cfg.MaxLive, cfg.MaxQueue), quiet: quiet{fn: cfg.OnIdle}}
	m.spares.stopped = sync.NewCond(&m.spares.mu)
	if cfg.Registry != nil {
		m.store = cfg.Registry
	}
	m.restore()
	return m
}

// Config returns the manager's configuration with defaults filled in.
func (m *Manager) Config() Config { return m.cfg }

// CLI resolves the claude binary and checks its version, once.
func (m *Manager) CLI(ctx context.Context) (path, version string, err error) {
	m.cliMu.Lock()
	defer m.cliMu.Unlock()
	if m.cliPath != "" {
		return m.cliPath, m.cliVersion, nil
	}
	path, err = claudeagent.FindCLI(m.cfg.CLIPath)
	if err != nil {
		return "", "", err
	}
	version, err = claudeagent.CLIVersionEnv(ctx, path, m.cfg.Env)
	if err != nil {
		return "", "", err
	}
	m.cliPath, m.cliVersion = path, version
	return path, version, nil
}

// BypassAvailable reports whether sessions may use bypassPermissions: the
// mode is allowed, and the CLI will accept the flag (as root it refuses
// without IS_SANDBOX=1).
func (m *Manager) BypassAvailable() bool {
	if !m.modeAllowed("bypassPermissions") {
		return false
	}
	if os.Geteuid() == 0 && os.Getenv("IS_SANDBOX") == "" && m.cfg.Env["IS_SANDBOX"] == "" {
		return false
	}
	return true
}

func (m *Manager) modeAllowed(mode string) bool {
	return m.cfg.AllowedModes == nil || slices.Contains(m.cfg.AllowedModes, mode)
}

// checkDir checks a directory: it exists, and lies within the allowed
// roots (see checkPath).
func (m *Manager) checkDir(what, dir string) error {
	if _, err := ValidateDir(what, dir); err != nil {
		return err
	}
	return m.checkPath(what, dir)
}

// checkPath checks that path lies within the allowed roots, resolving
// symlinks as they are now: a directory swapped for a link that leads
// elsewhere is caught at the next start.
func (m *Manager) checkPath(what, path string) error {
	if len(m.cfg.AllowedRoots) == 0 {
		return nil
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("resolving %s %q: %v", what, path, err)
	}
	for _, root := range m.cfg.AllowedRoots {
		r, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(r, real); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil
		}
	}
	return fmt.Errorf("%s %q is outside the directories this server allows (--allowed-roots %s): pass a path inside one of them", what, path, strings.Join(m.cfg.AllowedRoots, string(filepath.ListSeparator)))
}

// Validate checks and normalises create options without starting anything:
// the form of each option, then the server's policy (see admit).
func (m *Manager) Validate(opts *CreateOptions) error {
	var err error
	if opts.Cwd == "" {
		if opts.Cwd, err = os.Getwd(); err != nil {
			return fmt.Errorf("getting the server's working directory: %w", err)
		}
	}
	if opts.Cwd, err = ValidateDir("cwd", opts.Cwd); err != nil {
		return err
	}
	for i, d := range opts.AddDirs {
		if opts.AddDirs[i], err = ValidateDir("addDirs entry", d); err != nil {
			return err
		}
	}
	if err := ValidateModel(opts.Model); err != nil {
		return err
	}
	if err := ValidatePermissionMode(opts.PermissionMode); err != nil {
		return err
	}
	if err := ValidateToolRules("allowedTools", opts.AllowedTools); err != nil {
		return err
	}
	if err := ValidateToolRules("disallowedTools", opts.DisallowedTools); err != nil {
		return err
	}
	if err := ValidateToolNames("tools", opts.Tools); err != nil {
		return err
	}
	if opts.MaxTurns < 0 {
		return fmt.Errorf("invalid maxTurns %d: use a positive number, or omit it for no limit", opts.MaxTurns)
	}
	if opts.ForkSession && opts.ResumeSessionID == "" {
		return errors.New("forkSession needs resumeSessionId: name the Claude session to fork")
	}
	if opts.ResumeSessionID != "" && uuid.Validate(opts.ResumeSessionID) != nil {
		return fmt.Errorf("invalid resumeSessionId %q: it must be a Claude session id (a UUID, as returned in claudeSessionId)", opts.ResumeSessionID)
	}
	if err := ValidateMCPServers(opts.MCPServers); err != nil {
		return err
	}
	if err := moveSettingsPath(opts); err != nil {
		return err
	}
	if err := validateDelegation(opts); err != nil {
		return err
	}
	for _, p := range opts.Plugins {
		if _, err := ValidateDir("plugins entry", p); err != nil {
			return err
		}
	}
	_, err = m.gate(opts, change{creating: true})
	return err
}

// admit checks opts against the server's policy as it is now (the gate,
// policy.go) before a process starts: at create, and again before every
// start (resume, restore, wake from dormancy), so a session made under a
// looser policy does not run under a stricter one. It returns the CLI
// environment of the session's profile.
func (m *Manager) admit(opts *CreateOptions) (map[string]string, error) {
	return m.gate(opts, change{})
}

// Create validates opts, starts a session's process and initializes it.
// When every live process (MaxLive) is busy, the session is made without
// one (dormant): its first query starts it, waiting its turn.
func (m *Manager) Create(ctx context.Context, opts CreateOptions) (*Session, error) {
	m.quiet.begin() // a start is work too: the quiet spell counts from its end
	defer m.quiet.end()
	s, err := m.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	s.slot <- struct{}{}
	err = s.start(ctx, nil)
	<-s.slot
	if errors.Is(err, ErrTooMany) && !errors.Is(err, ErrShuttingDown) {
		// Every live process is busy: the session is made all the same and
		// starts with its first query, which waits its turn.
		s.log.Info("created without a process: every live process is busy", "max_live", m.cfg.MaxLive)
		m.persist()
		return s, nil
	}
	if err != nil {
		m.mu.Lock()
		delete(m.sessions, s.ID)
		m.mu.Unlock()
		s.close()
		return nil, err
	}
	s.resetIdleTimer()
	m.persist()
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
	m.refresh() // the per-user quota counts the sessions other instances hold too
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrShuttingDown
	}
	if len(m.sessions) >= m.cfg.MaxSessions {
		n := len(m.sessions)
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: %d sessions are open and --max-sessions is %d", ErrTooMany, n, m.cfg.MaxSessions)
	}
	if limit := m.cfg.UserMaxSessions; limit > 0 && opts.Owner != "" {
		if n := m.userSessionsLocked(opts.Owner, ""); n >= limit {
			m.mu.Unlock()
			return nil, fmt.Errorf("%w: user %s has %d open sessions and this server allows a user %d (--user-max-sessions); close one first", ErrTooMany, opts.Owner, n, limit)
		}
	}
	m.sessions[s.ID] = s
	m.mu.Unlock()
	if opts.Worktree.On {
		name := opts.Worktree.Name
		if name == "" {
			name = "session-" + s.ID[:8]
		}
		w, err := m.makeWorktree(ctx, opts.Cwd, name)
		if err != nil {
			m.mu.Lock()
			delete(m.sessions, s.ID)
			m.mu.Unlock()
			return nil, err
		}
		s.mu.Lock()
		s.worktree = w
		s.mu.Unlock()
		m.persist()
		s.log.Info("made a worktree for the session", "path", w.Path, "branch", w.Branch)
	}
	return s, nil
}

// Get returns the open session with id. One this instance does not hold
// is looked up in the registry, which other instances may share, and taken
// up as dormant (see adopt).
func (m *Manager) Get(id string) (*Session, error) {
	m.refresh() // a session closed on another instance is gone here too
	m.mu.Lock()
	s := m.sessions[id]
	m.mu.Unlock()
	if s == nil {
		return m.adopt(id)
	}
	return s, nil
}

// NotFoundError is the error for a session id that names no open session
// (of the caller's).
func NotFoundError(id string) error {
	return fmt.Errorf("%w: no open session has id %q; it was closed or never existed", ErrNotFound, id)
}

// List returns all open sessions, oldest first; with a shared registry,
// sessions another instance closed are gone.
func (m *Manager) List() []*Session {
	m.refresh()
	return m.list()
}

// list is List without looking at the registry.
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

// Count returns the number of open sessions.
func (m *Manager) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sessions)
}

// Close closes the session with id and returns how many remain open.
func (m *Manager) Close(id string) (int, error) {
	m.mu.Lock()
	s := m.sessions[id]
	delete(m.sessions, id)
	n := len(m.sessions)
	m.mu.Unlock()
	if s == nil {
		return n, fmt.Errorf("%w: no open session has id %q; it was already closed or never existed", ErrNotFound, id)
	}
	m.noteClosed(s)
	s.close()
	m.persist()
	return n, nil
}

// Discard closes a session and forgets it without touching the registry
// entry of other sessions; used for temporary sessions.
func (m *Manager) Discard(s *Session) {
	m.mu.Lock()
	delete(m.sessions, s.ID)
	m.mu.Unlock()
	s.close()
	m.persist()
}

// discardLater is Discard, with the process stopped in the background: a
// one-shot query's answer need not wait for its CLI to exit (tens of
// milliseconds). Shutdown waits for these closes.
func (m *Manager) discardLater(s *Session) {
	m.mu.Lock()
	delete(m.sessions, s.ID)
	m.mu.Unlock()
	m.closing.Go(func() {
		s.close()
		m.persist()
		m.fillSpares() // its live place is free now
	})
}

// Shutdown stops every process, in parallel, and refuses new sessions.
// Sessions stay in the registry as dormant so a restart can resume them.
func (m *Manager) Shutdown() {
	m.stopSpares()
	m.mu.Lock()
	m.closed = true
	m.pool.close()
	all := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	m.persist()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(func() { s.shutdown() })
	}
	wg.Wait()
	m.closing.Wait()
	m.quiet.stop()
	m.stopSharing() // writes the claims of the stopped processes released
}

// shuttingDown reports whether Shutdown has begun. Lock order: m.mu before
// any session's mu, so never call it with a session's lock held.
func (m *Manager) shuttingDown() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// LiveCount returns how many sessions have a process.
func (m *Manager) LiveCount() int { return m.pool.count() }

// Queued returns how many queries wait for a live process.
func (m *Manager) Queued() int { return m.pool.queued() }

// startProcess starts and initializes a CLI. On failure the process is gone
// and the error carries its exit code and stderr tail when it died.
func (m *Manager) startProcess(ctx context.Context, opts claudeagent.Options, log *slog.Logger) (*claudeagent.Process, *claudeagent.InitializeResponse, error) {
	path, _, err := m.CLI(ctx)
	if err != nil {
		return nil, nil, err
	}
	opts.Path = path
	opts.Logger = log
	opts.CloseTimeout = m.cfg.CloseStage
	opts.AllowDangerouslySkipPermissions = m.BypassAvailable()
	opts.Env = mergeEnv(m.cfg.Env, opts.Env)
	p, err := claudeagent.Start(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, m.cfg.StartTimeout)
	defer cancel()
	resp, err := p.Initialize(ictx, claudeagent.InitializeRequest{})
	if err == nil {
		return p, resp, nil
	}
	died := false
	select {
	case <-p.Exited():
		died = true
	default:
		p.Kill()
	}
	<-p.Done()
	if exitErr := p.Wait(); died && exitErr != nil {
		return nil, nil, fmt.Errorf("starting claude: %w", exitErr)
	}
	if tail := p.StderrTail(); tail != "" {
		return nil, nil, fmt.Errorf("starting claude: %w; stderr: %s", err, tail)
	}
	return nil, nil, fmt.Errorf("starting claude: %w", err)
}

// Spent is what every turn has cost so far, closed sessions included.
func (m *Manager) Spent() float64 {
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	return m.spent
}

func (m *Manager) addSpent(owner string, usd float64) {
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	m.spent += usd
	m.share.unsaved += usd
	if owner != "" {
		if m.userSpent == nil {
			m.userSpent = map[string]float64{}
		}
		m.userSpent[owner] += usd
		if m.share.userUnsaved == nil {
			m.share.userUnsaved = map[string]float64{}
		}
		m.share.userUnsaved[owner] += usd
	}
}

// checkUserBudget refuses a turn once a user's sessions together have spent
// --user-max-budget-usd.
func (m *Manager) checkUserBudget(owner string) error {
	limit := m.cfg.UserMaxBudgetUSD
	if owner == "" || limit <= 0 {
		return nil
	}
	m.persistMu.Lock()
	spent := m.userSpent[owner]
	m.persistMu.Unlock()
	if spent >= limit {
		return fmt.Errorf("%w: the sessions of user %s have cost $%s, and this server allows a user $%s (--user-max-budget-usd)", ErrBudget, owner, usd(math.Round(spent*1e6)/1e6), usd(limit))
	}
	return nil
}

// ownerEnv is the CLI environment of an owner's sessions: with
// --per-user-config-dir, a config directory of their own (transcripts
// apart).
func (m *Manager) ownerEnv(owner string) map[string]string {
	if owner == "" || m.cfg.PerUserConfigDir == "" {
		return nil
	}
	return map[string]string{"CLAUDE_CONFIG_DIR": filepath.Join(m.cfg.PerUserConfigDir, owner)}
}

// makeRoomFor keeps a user within --user-max-live: when s's owner has that
// many live sessions, the least recently used idle one goes dormant; when
// none is idle, s cannot start.
func (m *Manager) makeRoomFor(s *Session) error {
	owner, limit := s.opts.Owner, m.cfg.UserMaxLive
	if owner == "" || limit <= 0 {
		return nil
	}
	for range limit + 1 {
		var live int
		var victim *Session
		var oldest time.Time
		for _, o := range m.List() {
			if o == s || o.opts.Owner != owner {
				continue
			}
			since, idle := o.idleSince()
			o.mu.Lock()
			isLive := o.proc != nil
			o.mu.Unlock()
			if !isLive {
				continue
			}
			live++
			if idle && (victim == nil || since.Before(oldest)) {
				victim, oldest = o, since
			}
		}
		if live < limit {
			return nil
		}
		if victim == nil {
			return fmt.Errorf("%w: user %s has %d live sessions, all busy, and this server allows a user %d (--user-max-live); wait for one to finish", ErrTooMany, owner, live, limit)
		}
		victim.makeDormant("user-max-live reached")
	}
	return fmt.Errorf("%w: user %s is at --user-max-live %d", ErrTooMany, owner, limit)
}

// checkTotalBudget refuses a turn once all sessions together have spent
// --max-total-budget-usd.
func (m *Manager) checkTotalBudget() error {
	limit := m.cfg.MaxTotalBudgetUSD
	if spent := m.Spent(); limit > 0 && spent >= limit {
		return fmt.Errorf("%w: all sessions together have cost $%s, and this server allows $%s in all (--max-total-budget-usd); no new turns run until the operator raises it", ErrBudget, usd(math.Round(spent*1e6)/1e6), usd(limit))
	}
	return nil
}

// mergeEnv returns the variables of every map, later ones winning; nil when
// there are none.
func mergeEnv(maps ...map[string]string) map[string]string {
	var out map[string]string
	for _, m := range maps {
		for k, v := range m {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// decidePermission asks the caller when it can, else applies the policy.
// It always returns an answer, within the permission timeout.
func (m *Manager) decidePermission(ctx context.Context, req *PermissionRequest,
	ask func(context.Context, *PermissionRequest) (*claudeagent.PermissionResult, error)) *claudeagent.PermissionResult {
	why := "the caller cannot be asked (its MCP client did not declare elicitation)"
	if ask != nil {
		actx, cancel := context.WithTimeout(ctx, m.cfg.PermissionTimeout)
		res, err := ask(actx, req)
		cancel()
		switch {
		case err == nil && res != nil:
			if res.Behavior == "allow" && len(res.UpdatedInput) == 0 {
				// The CLI rejects an allow without updatedInput.
				res.UpdatedInput = claudeagent.Allow(req.Input).UpdatedInput
			}
			return res
		case errors.Is(err, context.DeadlineExceeded):
			why = fmt.Sprintf("the caller did not answer within %s", m.cfg.PermissionTimeout)
		case ctx.Err() != nil:
			why = "the request was cancelled"
		default:
			why = fmt.Sprintf("asking the caller failed (%v)", err)
		}
		m.log.Info("permission question unanswered; applying policy", "tool", req.ToolName, "why", why, "policy", m.cfg.PermissionPolicy)
	}
	if m.cfg.PermissionPolicy == "allow" {
		return claudeagent.Allow(req.Input)
	}
	rule := req.ToolName
	return claudeagent.Deny(fmt.Sprintf(
		"Permission to use %s was denied: %s and the server's policy is to deny. "+
			"To allow it, the caller can switch the session's permission mode (e.g. to acceptEdits or bypassPermissions) "+
			"or create the session with allowedTools including %q.", req.ToolName, why, rule))
}
