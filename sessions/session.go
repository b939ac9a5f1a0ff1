package sessions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/images"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/listing"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/policy"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
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
	ErrDepthExceeded = policy.ErrDepthExceeded
	ErrRefused       = errors.New("refused by the server's policy")
	ErrBudget        = errors.New("budget spent")
	// ErrElsewhere: the session's process runs on another instance.
	ErrElsewhere = store.ErrElsewhere
)

// CreateOptions describe a session (see options.CreateOptions).
type CreateOptions = options.CreateOptions

// QueryOptions tune one query: run through Session.Query, which waits for
// its end, or Session.StartRun, which runs it in the background as a Run
// that calls follow.
type QueryOptions struct {
	IncludeThinking bool
	// Effort, when set, is this query's effort; the session's comes back
	// after the turn.
	Effort string
	// Images go with the prompt, as image content blocks.
	Images []images.Image
	// OnEvent receives the turn's events in order, from one goroutine, all
	// before Query returns (a Run's events go to its views and watchers).
	OnEvent func(turn.Event)
	// OnLimit is what the query does when the account's usage limit refuses
	// it: OnWait ("" too) waits for the reset and goes on,
	// OnFail ends at once.
	OnLimit string
	// AskPermission asks the caller about a tool call; nil (or an error)
	// applies the manager's policy — unless QueueQuestions, with which a
	// Run's questions wait in the run for whoever serves them
	// (see [Run.Questions]).
	AskPermission  func(ctx context.Context, req *turn.PermissionRequest) (*claudeagent.PermissionResult, error)
	QueueQuestions bool

	// The rest is a Run's. CloseAfter closes the session once the result
	// is collected (or dropped).
	CloseAfter bool
	// Listener is the run's first view (see [Run.Attach]), Watchers its
	// first watchers (see [Run.Watch]).
	Listener Listener
	Watchers []Listener
	// ReturnAfter makes StartRun return the run after this long even when
	// its turn has not started yet (the process is still starting); 0 waits
	// for the start. Errors that keep the turn from starting then come as
	// the run's result.
	ReturnAfter time.Duration
}

// Info describes a session for listing (see package listing).
type Info = listing.Info

// Session is one conversation with Claude Code. Its process may come and
// go (dormant sessions resume with --resume); its id stays. Its fields are
// grouped by what they describe: its state machine (package state), its
// record (what the store keeps), its live process and running turn,
// and its history; mu guards them all.
type Session struct {
	ID  string
	m   *Manager
	log *slog.Logger

	// mu guards everything below (see state.State for the lock discipline);
	// never hold it while calling a Manager method that locks (lock order:
	// Manager.mu, then Session.mu).
	mu sync.Mutex
	// steerMu orders a message steered into the running turn with the
	// end of that turn (steer.go); taken before mu.
	steerMu sync.Mutex

	st      *state.Machine // its state and owner (package state)
	failure string         // why it is refused or failed

	opts CreateOptions
	sessionRecord
	liveProcess
	history history.Buffer // the conversation as the session keeps it in memory (conversation.go)
	limits  limitShown     // what it shows of the usage limit (limit.go)

	queuePos      int            // while queued: the position, 1 is next
	run           *Run           // the latest run whose result may still be collected
	followUp      *followUp      // the turn the CLI runs for steered messages, while it runs (steer.go)
	followRun     *Run           // the latest follow-up's run, whose result may still be collected
	textFollowers int            // who follow the running turn's text as it streams (FollowText)
	worktreeFinal *worktree.Info // what close did with the worktree
	idleTimer     *time.Timer
	oneShot       bool // opened by OneShot: its query follows at once

	saves        *saveQueue[save] // its record's writes, in order (share.go)
	transcriptMu sync.Mutex       // one save of its transcript at a time (durable.go)
}

// sessionRecord is what the store keeps of a session besides its options.
type sessionRecord struct {
	claudeSessionID      string
	pastClaudeSessionIDs []string // the Claude session ids it had before (see setClaudeSessionIDLocked)
	resumable            bool     // a transcript exists, so --resume works
	forkPending          bool     // a fork whose first turn has not run: fork again on start
	model                string
	worktree             *worktree.Worktree
	created              time.Time
	lastUsed             time.Time
	queries              int
	usage                turn.Usage
	cost                 float64
}

// liveProcess is a session's process, while it has one, and the turn
// running in it.
type liveProcess struct {
	proc        *claudeagent.Process
	pumpDone    chan struct{}
	models      []claudeagent.ModelInfo
	profileEnv  map[string]string // of opts.Profile, as of the last start
	procEffort  string            // the effort the live process runs with
	procCost    float64           // cumulative cost the current process reported
	everStarted bool              // a process of this session started once
	replay      bool              // the transcript was lost: the next prompt carries the recorded history
	lastMessage string            // the last turn's last assistant message (registryfile.Entry.LastMessage)
	histAbs     int               // history entries (history.Buffer.Total) in the store
	histSeq     int               // the store's next history sequence number
	following   bool              // a goroutine follows the transcript (followTranscript)
	cur         *turn.Turn        // the running turn
	curAsk      func(ctx context.Context, req *turn.PermissionRequest) (*claudeagent.PermissionResult, error)
	curTrace    context.Context // the running query's trace (its claude.turn span; tracing.go), nil while tracing is off
}

// onMove, when set (by the tests, before any session exists), sees every
// move of a session's state, allowed or not; s.mu is held.
var onMove func(s *Session, from, to state.State)

func newSession(m *Manager, opts CreateOptions) *Session {
	id := uuid.NewString()
	now := time.Now()
	s := &Session{
		ID:            id,
		m:             m,
		log:           m.log.With("session_id", id),
		opts:          opts,
		sessionRecord: sessionRecord{created: now, lastUsed: now},
	}
	s.saves = newSaveQueue(func(w save) { m.write(s, w) }, mergeSaves)
	s.st = state.New(&s.mu, func(from, to state.State) {
		if !state.Allowed(from, to) {
			s.log.Error("a session state transition the table does not allow", "from", from, "to", to)
		}
		if onMove != nil {
			onMove(s, from, to)
		}
	})
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

// loadHistory starts the history with the conversation this session
// continues: the store's, which every turn's end writes before its answer
// goes out, or else the CLI's transcript (no store, or a record older than
// the store's history). Hold no lock.
func (s *Session) loadHistory() {
	var h []history.Entry
	var err error
	if s.m.share.Stored() {
		h, err = s.m.share.ReadHistory(context.Background(), s.ID)
		if err != nil {
			s.log.Warn("reading the history from the session store", "err", err)
		}
	}
	stored := len(h)
	if stored == 0 {
		s.mu.Lock()
		path := s.transcriptPathLocked()
		s.mu.Unlock()
		if h, err = history.Load(path); err != nil {
			s.log.Warn("reading the transcript for the history", "path", path, "err", err)
		}
	}
	s.mu.Lock()
	s.setHistoryLocked(h)
	s.histSeq, s.histAbs = stored, s.history.Total()
	if stored == 0 {
		s.histAbs = 0 // none of it is in the store yet
	}
	s.mu.Unlock()
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
		PermissionMode: s.opts.PermissionMode, State: s.st.State(), Created: s.created, LastUsed: s.lastUsed,
		Queries: s.queries, Usage: s.usage, CostUSD: s.cost, Profile: s.opts.Profile, Failure: s.failure,
	}
	if in.PermissionMode == "" {
		in.PermissionMode = "default"
	}
	in.LimitedUntil, in.LimitKind, in.LimitNote = s.limits.Info(s.m.now())
	if in.State == state.Interrupting {
		in.State = state.Running // the turn has not ended
	}
	if s.proc != nil {
		in.PID = s.proc.PID()
	}
	return in
}

func (s *Session) usableLocked() error {
	switch s.st.State() {
	case state.Closed:
		return fmt.Errorf("%w: %s", ErrClosed, s.ID)
	case state.Failed:
		return fmt.Errorf("%w: %s: %s", ErrFailed, s.ID, s.failure)
	}
	return nil
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
func (s *Session) WorktreeInfo(ctx context.Context) *worktree.Info {
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
