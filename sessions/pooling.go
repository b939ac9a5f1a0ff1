package sessions

import (
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/live"
)

// The manager's side of package live (the live-process pool and the warm
// spares): a session as a holder of a live place, and what the spares need
// from the manager — whether it keeps any, which option sets a spare can
// serve and with what process options, starting a process, the quiet
// spell. When a spare starts is decided in one place, spareOn; taking one
// is Session.takeSpare (start.go).

// newLive gives m its pool and spares.
func newLive(m *Manager) {
	cfg := m.cfg
	m.pool = live.NewPool(live.PoolConfig{Max: cfg.MaxLive, MaxQueue: cfg.MaxQueue, ErrFull: ErrTooMany, ErrClosed: ErrShuttingDown})
	m.spares = live.NewSpares(live.SparesConfig[CreateOptions]{
		Sets:         cfg.WarmSpares,
		Pool:         m.pool,
		IdleTimeout:  cfg.IdleTimeout,
		StartTimeout: cfg.StartTimeout,
		Log:          m.log,
		Options:      m.freshOptions,
		Start:        m.cli.Start,
		Begin:        m.quiet.Begin,
		End:          m.quiet.End,
	})
}

// sessionHolder is a session as the pool sees it (live.Holder); the
// session's own methods stay unexported.
type sessionHolder struct{ s *Session }

// IdleSince implements live.Holder: an idle live session can give its
// process up.
func (h sessionHolder) IdleSince() (time.Time, bool) { return h.s.idleSince() }

// Evict implements live.Holder: the session goes dormant.
func (h sessionHolder) Evict(reason string) bool { return h.s.makeDormant(reason) }

// holder is s in the pool.
func (s *Session) holder() live.Holder { return sessionHolder{s} }

// sparesOn reports whether the manager keeps spares.
func (m *Manager) sparesOn() bool { return m.cfg.WarmSpares > 0 && m.cfg.MaxLive > 1 }

// freshOptions returns the process options of a new session with opts,
// when a spare could serve it: no conversation to resume or fork, no
// worktree of its own.
func (m *Manager) freshOptions(opts CreateOptions) (claudeagent.Options, bool) {
	if opts.ResumeSessionID != "" || opts.Worktree.On {
		return claudeagent.Options{}, false
	}
	env, err := m.admit(&opts)
	if err != nil {
		return claudeagent.Options{}, false
	}
	s := newSession(m, opts)
	s.profileEnv = env
	return s.processOptions(), true
}

// spareEvent is something that happened which may start a warm spare;
// spareOn decides what each one does.
type spareEvent uint8

const (
	serverStarted    spareEvent = iota // the server serves: spares for the options of a likely first session
	sessionCreated                     // Create made a session: the next create is likely alike
	oneShotBegun                       // OneShot opened a session whose query starts at once
	createTookSpare                    // a created session took a spare
	oneShotTookSpare                   // a one-shot's (or temporary) session took a spare
	turnEnded                          // a query's turn is over
	oneShotEnded                       // a one-shot's session ended (discarded, closed): its place is free
)

// spareOn is the one place that decides when a warm spare starts; each
// event that may start one calls it by name. The option set of a create
// (and at the server's start, the default options) is wanted and its
// spare starts at once: the session's first query comes later. A query
// that starts at once — a one-shot's, an agent tool's — must not compete
// with a CLI starting (about 300 ms of CPU): its options are wanted, but
// the spares are filled when its turn ends (or, for a temporary session,
// when the session ends), never when the call that started it returns;
// so is the spare it took replaced (live.Spares.DeferRefill, ended by
// RefillAfterTurn). opts are the session's options (the zero value for
// events that have none).
func (m *Manager) spareOn(ev spareEvent, opts CreateOptions) {
	if !m.sparesOn() {
		return
	}
	switch ev {
	case serverStarted, sessionCreated, oneShotBegun:
		temporary := opts.Temporary
		later := ev == oneShotBegun || temporary
		opts.Temporary = false
		if err := m.Validate(&opts); err != nil {
			return
		}
		if !later {
			m.spares.Want(opts)
			return
		}
		m.spares.WantLater(opts)
		if ev == oneShotBegun && !temporary {
			m.spares.DeferRefill() // a kept session has no end to fill them at: its turn's end does
		}
	case createTookSpare:
		go m.spares.Fill()
	case oneShotTookSpare:
		m.spares.DeferRefill()
	case turnEnded:
		m.spares.RefillAfterTurn()
	case oneShotEnded:
		m.spares.Fill()
	}
}

// ServerStarted tells the manager that the server serves: the first warm
// spares start, for the default options (hosts start the server in the
// project, where the first session is likely to work).
func (m *Manager) ServerStarted() { m.spareOn(serverStarted, CreateOptions{}) }

// Spares reports how many warm spares are ready.
func (m *Manager) Spares() int { return len(m.spares.Snapshot().Ready) }
