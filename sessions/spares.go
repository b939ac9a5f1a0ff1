package sessions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
)

// Warm spares: started and initialized claude processes kept ready for the
// option sets most likely next, so that a create or a one-shot query whose
// options match skips the CLI's start (most of a second). A spare counts
// toward MaxLive but always gives way to a session (it is the first an
// eviction picks), stops after the idle timeout, is never listed as a
// session, and stops with the manager (its process carries the server's
// marker, so not even a killed server leaves it behind).

// spare is one ready process.
type spare struct {
	m         *Manager
	key       string
	sessionID string // the --session-id it was started with
	proc      *claudeagent.Process
	resp      *claudeagent.InitializeResponse
	owner     atomic.Pointer[Session] // the session that took it; it answers the control requests
	timer     *time.Timer
	cancel    context.CancelFunc // cancels its start
	started   chan struct{}      // closed when its start is over (ready or failed)
}

// IdleSince implements live.Holder: a spare not yet taken gives its place
// up before any session (the zero time is the oldest).
func (sp *spare) IdleSince() (time.Time, bool) {
	return time.Time{}, sp.owner.Load() == nil
}

// Evict implements live.Holder: a spare still starting is cancelled.
func (sp *spare) Evict(reason string) bool {
	if sp.owner.Load() != nil {
		return false
	}
	select {
	case <-sp.started:
	default:
		sp.cancel()
		<-sp.started
	}
	if !sp.m.dropSpare(sp) {
		return false // taken, or gone (and its place freed) already
	}
	sp.m.stopSpare(sp, reason)
	return true
}

// onControl answers the CLI's control requests: the taking session's.
func (sp *spare) onControl(ctx context.Context, req *claudeagent.ControlRequest) (any, error) {
	if s := sp.owner.Load(); s != nil {
		return s.onControl(ctx, req)
	}
	return nil, claudeagent.ErrUnsupportedControl
}

// spareState is the manager's warm spares.
type spareState struct {
	mu       sync.Mutex
	ready    []*spare
	starting map[string]bool
	recent   []spareWant // the option sets spares are kept for, newest first
	closed   bool
	wg       sync.WaitGroup // spares being started
	stopping int            // spares being stopped
	stopped  *sync.Cond     // on mu: signalled when stopping drops

	// refill is the start of the spares a one-shot query's session took,
	// put off until a turn ends (or refillDelay passes): a CLI starting
	// is about 300 ms of CPU, which would slow the query down.
	refill *time.Timer
}

// refillDelay bounds how long the refill after a one-shot query's take
// waits for a turn to end.
const refillDelay = 5 * time.Second

// wanted reports whether spares are kept for key; st.mu is held.
func (st *spareState) wanted(key string) bool {
	return slices.ContainsFunc(st.recent, func(w spareWant) bool { return w.key == key })
}

// spareWant is an option set a spare is kept for.
type spareWant struct {
	key  string
	opts CreateOptions
}

// spareKey identifies the process a fresh session with opts starts: its
// arguments (without its own session id), directory and environment.
func spareKey(o claudeagent.Options) string {
	var args []string
	for _, a := range o.Args() {
		if !strings.HasPrefix(a, "--session-id=") {
			args = append(args, a)
		}
	}
	b, _ := json.Marshal(struct {
		Args []string
		Cwd  string
		Env  map[string]string
	}{args, o.Cwd, o.Env})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

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

// WantSpares keeps spares for the option set of opts (after a create or a
// one-shot query; at start, the default options): it becomes the newest of
// the WarmSpares option sets spares are kept for, and a spare is started
// for every one that lacks it, as far as there are free live places.
func (m *Manager) WantSpares(opts CreateOptions) { m.wantSpares(opts, true) }

// wantSpares is WantSpares; without fill it only records the option set
// (and stops the spares of those no longer wanted, in the background): a
// one-shot query's spares are filled when its session ends.
func (m *Manager) wantSpares(opts CreateOptions, fill bool) {
	if !m.sparesOn() {
		return
	}
	if err := m.Validate(&opts); err != nil {
		return
	}
	po, ok := m.freshOptions(opts)
	if !ok {
		return
	}
	key := spareKey(po)
	st := &m.spares
	st.mu.Lock()
	st.recent = slices.DeleteFunc(st.recent, func(w spareWant) bool { return w.key == key })
	st.recent = append([]spareWant{{key, opts}}, st.recent...)
	if len(st.recent) > m.cfg.WarmSpares {
		st.recent = st.recent[:m.cfg.WarmSpares]
	}
	// Spares for option sets no longer wanted go first.
	var stale []*spare
	st.ready = slices.DeleteFunc(st.ready, func(sp *spare) bool {
		if !st.wanted(sp.key) {
			stale = append(stale, sp)
			if sp.timer != nil {
				sp.timer.Stop()
			}
			return true
		}
		return false
	})
	st.stopping += len(stale) // stopSpares waits for these
	st.mu.Unlock()
	stop := func() {
		for _, sp := range stale {
			m.stopSpare(sp, "its option set is no longer wanted")
		}
	}
	if !fill {
		if len(stale) > 0 {
			go stop()
		}
		return
	}
	stop()
	m.fillSpares()
}

// fillSpares starts a spare for each wanted option set that has none.
func (m *Manager) fillSpares() {
	st := &m.spares
	st.mu.Lock()
	var todo []spareWant
	for _, w := range st.recent {
		has := st.starting[w.key] || slices.ContainsFunc(st.ready, func(sp *spare) bool { return sp.key == w.key })
		if !has && !st.closed {
			if st.starting == nil {
				st.starting = map[string]bool{}
			}
			st.starting[w.key] = true
			todo = append(todo, w)
			st.wg.Add(1)
		}
	}
	st.mu.Unlock()
	for _, w := range todo {
		go func() {
			defer st.wg.Done()
			m.startSpare(w)
		}()
	}
}

// startSpare starts one spare, when a live place is free (it never makes a
// session dormant).
func (m *Manager) startSpare(w spareWant) {
	m.quiet.begin()
	defer m.quiet.end()
	st := &m.spares
	done := func() {
		st.mu.Lock()
		delete(st.starting, w.key)
		st.mu.Unlock()
	}
	po, ok := m.freshOptions(w.opts)
	if !ok || spareKey(po) != w.key {
		done()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.StartTimeout)
	defer cancel()
	sp := &spare{m: m, key: w.key, sessionID: uuid.NewString(), cancel: cancel, started: make(chan struct{})}
	defer close(sp.started)
	if !m.pool.TryAcquire(sp) {
		done()
		return
	}
	po.SessionID = sp.sessionID
	po.OnControlRequest = sp.onControl
	p, resp, err := m.startProcess(ctx, po, m.log.With("spare", w.key))
	if err != nil {
		m.pool.Release(sp)
		done()
		m.log.Debug("starting a warm spare", "err", err)
		return
	}
	sp.proc, sp.resp = p, resp
	st.mu.Lock()
	delete(st.starting, w.key)
	if st.closed {
		st.stopping++
		st.mu.Unlock()
		m.stopSpare(sp, "shutting down")
		return
	}
	if !st.wanted(w.key) {
		// Another option set replaced it while it started.
		st.stopping++
		st.mu.Unlock()
		m.stopSpare(sp, "its option set is no longer wanted")
		m.fillSpares() // its live place may be what the wanted one lacked
		return
	}
	st.ready = append(st.ready, sp)
	if d := m.cfg.IdleTimeout; d > 0 {
		sp.timer = time.AfterFunc(d, func() { m.stopSpareIfReady(sp, "idle timeout") })
	}
	st.mu.Unlock()
	m.log.Debug("warm spare ready", "pid", p.PID(), "key", w.key)
	go func() { // a spare that dies before it is taken gives its place back
		<-p.Done()
		if m.dropSpare(sp) {
			m.log.Debug("a warm spare ended before it was taken", "err", p.Wait())
			m.stopSpare(sp, "it ended")
		}
	}()
}

// takeSpare hands a ready spare of key to s, or returns nil. The spare's
// live place becomes s's; a new spare starts behind it.
func (m *Manager) takeSpare(key string, s *Session) *spare {
	if !m.sparesOn() {
		return nil
	}
	st := &m.spares
	st.mu.Lock()
	i := slices.IndexFunc(st.ready, func(sp *spare) bool { return sp.key == key })
	if i < 0 {
		st.mu.Unlock()
		return nil
	}
	sp := st.ready[i]
	st.ready = slices.Delete(st.ready, i, i+1)
	if sp.timer != nil {
		sp.timer.Stop()
	}
	st.mu.Unlock()
	select {
	case <-sp.proc.Exited(): // died just now
		m.pool.Release(sp)
		return nil
	default:
	}
	sp.owner.Store(s)
	m.pool.Handover(sp, s.holder())
	if s.opts.Temporary {
		m.deferRefill()
	} else {
		go m.fillSpares() // a created session's first query comes later
	}
	return sp
}

// deferRefill starts the spares when the next turn ends (see
// refillAfterTurn), or after refillDelay at the latest.
func (m *Manager) deferRefill() {
	st := &m.spares
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.refill == nil {
		st.refill = time.AfterFunc(refillDelay, m.refillAfterTurn)
	}
}

// refillAfterTurn starts the spares a deferred refill is waiting for, if
// any. A query calls it when its turn is over.
func (m *Manager) refillAfterTurn() {
	st := &m.spares
	st.mu.Lock()
	t := st.refill
	st.refill = nil
	st.mu.Unlock()
	if t != nil {
		t.Stop()
		go m.fillSpares()
	}
}

// dropSpare removes a ready spare from the list, to be stopped (see
// stopSpare); false when it was taken or dropped already.
func (m *Manager) dropSpare(sp *spare) bool {
	st := &m.spares
	st.mu.Lock()
	defer st.mu.Unlock()
	i := slices.Index(st.ready, sp)
	if i < 0 {
		return false
	}
	st.ready = slices.Delete(st.ready, i, i+1)
	if sp.timer != nil {
		sp.timer.Stop()
	}
	st.stopping++
	return true
}

// stopSpareIfReady stops a spare that was not taken meanwhile.
func (m *Manager) stopSpareIfReady(sp *spare, reason string) {
	if m.dropSpare(sp) {
		m.stopSpare(sp, reason)
	}
}

// stopSpare stops a spare that dropSpare took off the list, and frees its
// place.
func (m *Manager) stopSpare(sp *spare, reason string) {
	m.log.Debug("stopping a warm spare", "reason", reason, "pid", sp.proc.PID())
	_ = sp.proc.Close()
	<-sp.proc.Done()
	m.pool.Release(sp)
	st := &m.spares
	st.mu.Lock()
	st.stopping--
	st.stopped.Broadcast()
	st.mu.Unlock()
}

// stopSpares stops every spare, waiting for those being started or
// stopped, and starts no more.
func (m *Manager) stopSpares() {
	st := &m.spares
	st.mu.Lock()
	st.closed = true
	if st.refill != nil {
		st.refill.Stop()
		st.refill = nil
	}
	st.mu.Unlock()
	st.wg.Wait()
	st.mu.Lock()
	ready := st.ready
	st.ready = nil
	for _, sp := range ready {
		if sp.timer != nil {
			sp.timer.Stop()
		}
	}
	st.stopping += len(ready)
	st.mu.Unlock()
	var wg sync.WaitGroup
	for _, sp := range ready {
		wg.Go(func() { m.stopSpare(sp, "shutting down") })
	}
	wg.Wait()
	st.mu.Lock()
	for st.stopping > 0 {
		st.stopped.Wait()
	}
	st.mu.Unlock()
}

// Spares reports how many warm spares are ready.
func (m *Manager) Spares() int {
	st := &m.spares
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.ready)
}
