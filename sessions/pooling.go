package sessions

import (
	"context"
	"log/slog"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/live"
)

// The manager's side of package live (the live-process pool and the warm
// spares): a session as a holder of a live place, and what the spares need
// from the manager — whether it keeps any, which option sets a spare can
// serve and with what process options, starting a process, the quiet
// spell. When a spare starts is decided in one place, live.Spares.On (through spareOn); taking one
// is Session.takeSpare (start.go).

// newLive gives m its pool and spares.
func newLive(m *Manager) {
	cfg := m.cfg
	m.pool = live.NewPool(live.PoolConfig{Max: cfg.MaxLive, MaxQueue: cfg.MaxQueue, UserMax: cfg.UserMaxLive, ErrFull: ErrTooMany, ErrClosed: ErrShuttingDown})
	m.spares = live.NewSpares(live.SparesConfig[CreateOptions]{
		Sets:         cfg.WarmSpares,
		Pool:         m.pool,
		IdleTimeout:  cfg.IdleTimeout,
		StartTimeout: cfg.StartTimeout,
		Log:          m.log,
		Options:      m.freshOptions,
		Validate:     m.Validate,
		Start:        m.startSpare,
		Begin:        m.quiet.Begin,
		End:          m.quiet.End,
	})
}

// startSpare starts a warm spare's CLI as a session's starts (see
// Session.projectAlone): in the jail its project's transcripts and its
// conversation's file checkpoints alone in view.
func (m *Manager) startSpare(ctx context.Context, opts claudeagent.Options, log *slog.Logger) (*claudeagent.Process, *claudeagent.InitializeResponse, error) {
	if opts.Cwd != "" { // validated options have one
		viewAlone(&opts, history.TranscriptPath(mergeEnv(m.cfg.Env, opts.Env), opts.Cwd, "-"), log, nil)
	}
	return m.cli.Start(ctx, opts, log)
}

// sessionHolder is a session as the pool sees it (live.Holder); the
// session's own methods stay unexported.
type sessionHolder struct{ s *Session }

// IdleSince implements live.Holder: an idle live session can give its
// process up.
func (h sessionHolder) IdleSince() (time.Time, bool) { return h.s.idleSince() }

// Evict implements live.Holder: the session goes dormant.
func (h sessionHolder) Evict(reason string) bool { return h.s.makeDormant(reason) }

// Owner implements live.Holder: its user's live processes are capped.
func (h sessionHolder) Owner() string { return h.s.opts.Owner }

// holder is s in the pool.
func (s *Session) holder() live.Holder { return sessionHolder{s} }

// sparesOn reports whether the manager keeps spares.
func (m *Manager) sparesOn() bool { return m.cfg.WarmSpares > 0 && m.cfg.MaxLive > 1 }

// freshOptions returns the process options of a new session with opts,
// when a spare could serve it: no conversation to resume or fork, no
// worktree of its own. A spare has no display name (see live.SpareKey).
func (m *Manager) freshOptions(opts CreateOptions) (claudeagent.Options, bool) {
	if opts.ResumeSessionID != "" || opts.Worktree.On {
		return claudeagent.Options{}, false
	}
	opts.Name = ""
	env, err := m.admit(&opts)
	if err != nil {
		return claudeagent.Options{}, false
	}
	s := newSession(m, opts)
	s.profileEnv = env
	return s.processOptions(), true
}

// spareOn tells the spares of ev (see live.Spares.On, the one place that
// decides when a spare starts), unless the manager keeps none; opts are
// the session's options (the zero value for events that have none).
func (m *Manager) spareOn(ev live.Event, opts CreateOptions) {
	if !m.sparesOn() {
		return
	}
	temporary := opts.Temporary
	opts.Temporary = false
	m.spares.On(ev, opts, temporary)
}

// ServerStarted tells the manager that the server serves: the first warm
// spares start, for the default options (hosts start the server in the
// project, where the first session is likely to work).
func (m *Manager) ServerStarted() { m.spareOn(live.ServerStarted, CreateOptions{}) }

// Spares reports how many warm spares are ready.
func (m *Manager) Spares() int { return len(m.spares.Snapshot().Ready) }
