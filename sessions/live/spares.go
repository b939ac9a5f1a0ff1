package live

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent/ceiling"
)

// Warm spares: started and initialized claude processes kept ready for the
// option sets most likely next, so that a new session whose options match
// skips the CLI's start (most of a second). A spare counts toward the
// pool's Max but always gives way to any other holder (it is the first an
// eviction picks), stops after the idle timeout, and stops at Close (its
// process carries the server's marker, so not even a killed server leaves
// it behind).

// refillDelay bounds how long a deferred refill (DeferRefill) waits for a
// turn to end.
const refillDelay = 5 * time.Second

// SparesConfig is what the spares need from their manager; O is the
// option set a spare is kept for (the manager's, opaque here).
type SparesConfig[O any] struct {
	// Sets is how many option sets spares are kept for (--warm-spares).
	Sets int
	// Pool gives a spare its live place; it never makes a holder give
	// one up for a spare.
	Pool *Pool
	// IdleTimeout stops a spare nobody took for that long; 0 keeps it.
	IdleTimeout time.Duration
	// StartTimeout bounds a spare's start.
	StartTimeout time.Duration
	// Log gets the spares' debug lines; nil discards them.
	Log *slog.Logger
	// Options returns the process options of a new session with o, or
	// false when a spare cannot serve one (it resumes a conversation, it
	// has a worktree, the policy refuses it).
	Options func(o O) (claudeagent.Options, bool)
	// Validate, when set, checks and completes an option set before it is
	// wanted (see On); an error drops it.
	Validate func(o *O) error
	// Start starts and initializes a process; on failure the process is
	// gone.
	Start func(ctx context.Context, opts claudeagent.Options, log *slog.Logger) (*claudeagent.Process, *claudeagent.InitializeResponse, error)
	// Begin and End, when set, bracket each spare's start (work that
	// keeps the manager from being idle).
	Begin, End func()
}

// Spares is a manager's warm spares. Its methods are safe for concurrent
// use.
type Spares[O any] struct {
	cfg SparesConfig[O]

	mu       sync.Mutex
	ready    []*Spare
	starting map[string]bool
	recent   []want[O] // the option sets spares are kept for, newest first
	closed   bool
	wg       sync.WaitGroup // spares being started
	stopping int            // spares being stopped
	stopped  *sync.Cond     // on mu: signalled when stopping drops

	// refill is the start of the spares a taker took, put off until a
	// turn ends (or refillDelay passes; the manager defers it for a
	// one-shot query): a CLI starting is about 300 ms of CPU, which would
	// slow the query down.
	refill *time.Timer
}

// want is an option set a spare is kept for.
type want[O any] struct {
	key  string
	opts O
}

// NewSpares returns the spares of cfg, none wanted yet.
func NewSpares[O any](cfg SparesConfig[O]) *Spares[O] {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	st := &Spares[O]{cfg: cfg}
	st.stopped = sync.NewCond(&st.mu)
	return st
}

// Spare is one ready process.
type Spare struct {
	set       spareSet // the spares it belongs to
	key       string
	sessionID string // the --session-id it was started with
	proc      *claudeagent.Process
	resp      *claudeagent.InitializeResponse
	taker     atomic.Pointer[claudeagent.ControlHandler] // the control requests' handler of the session that took it
	timer     *time.Timer
	cancel    context.CancelFunc // cancels its start
	started   chan struct{}      // closed when its start is over (ready or failed)
}

// spareSet is what a spare's eviction asks of its Spares.
type spareSet interface {
	drop(sp *Spare) bool
	stop(sp *Spare, reason string)
}

// Key is the key of the option set the spare was started for (see
// SpareKey).
func (sp *Spare) Key() string { return sp.key }

// SessionID is the Claude session id (--session-id) the spare's process
// was started with.
func (sp *Spare) SessionID() string { return sp.sessionID }

// Process is the spare's process.
func (sp *Spare) Process() *claudeagent.Process { return sp.proc }

// Initialized is the process's answer to initialize.
func (sp *Spare) Initialized() *claudeagent.InitializeResponse { return sp.resp }

// IdleSince implements Holder: a spare not yet taken gives its place up
// before any session (the zero time is the oldest).
func (sp *Spare) IdleSince() (time.Time, bool) {
	return time.Time{}, sp.taker.Load() == nil
}

// Evict implements Holder: a spare still starting is cancelled.
// Owner implements Holder: a spare works for nobody until it is taken.
func (sp *Spare) Owner() string { return "" }

func (sp *Spare) Evict(reason string) bool {
	if sp.taker.Load() != nil {
		return false
	}
	select {
	case <-sp.started:
	default:
		sp.cancel()
		<-sp.started
	}
	if !sp.set.drop(sp) {
		return false // taken, or gone (and its place freed) already
	}
	sp.set.stop(sp, reason)
	return true
}

// onControl answers the CLI's control requests: the taking session's.
func (sp *Spare) onControl(ctx context.Context, req *claudeagent.ControlRequest) (any, error) {
	if h := sp.taker.Load(); h != nil {
		return (*h)(ctx, req)
	}
	return nil, claudeagent.ErrUnsupportedControl
}

// SpareKey identifies the process a fresh session with opts starts: its
// arguments (without its own session id), what it is given besides them
// (the session options, the MCP configuration: the texts and documents the
// command line does not carry), directory, environment (file checkpoints
// too: a server-wide setting today, but a spare started without them would
// give a session nothing to rewind) and ceiling. The display name is not
// part of it: a spare starts without one and the session that takes it
// names it (Process.Rename), so a named session is served as fast as an
// unnamed one.
func SpareKey(o claudeagent.Options) string {
	o.Name = ""
	var args []string
	for _, a := range o.Args() {
		if !strings.HasPrefix(a, "--session-id=") {
			args = append(args, a)
		}
	}
	b, _ := json.Marshal(struct {
		Args        []string
		Session     claudeagent.SessionOptions
		MCPConfig   string
		Cwd         string
		Env         map[string]string
		Ceiling     *ceiling.Ceiling
		Jail        bool
		Checkpoints bool
	}{args, o.SessionOptions, o.MCPConfig, o.Cwd, o.Env, o.Ceiling, o.Jail, o.FileCheckpoints})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// wanted reports whether spares are kept for key; st.mu is held.
func (st *Spares[O]) wanted(key string) bool {
	return slices.ContainsFunc(st.recent, func(w want[O]) bool { return w.key == key })
}

// Want keeps spares for the option set opts (validated by the caller): it
// becomes the newest of the Sets option sets spares are kept for, the
// spares of those no longer wanted stop, and a spare is started for every
// wanted set that lacks it, as far as there are free live places.
func (st *Spares[O]) Want(opts O) {
	stale, ok := st.keep(opts)
	if !ok {
		return
	}
	for _, sp := range stale {
		st.stop(sp, "its option set is no longer wanted")
	}
	st.Fill()
}

// WantLater is Want without the Fill: the stale spares stop in the
// background and nothing starts until a later Fill (or RefillAfterTurn).
func (st *Spares[O]) WantLater(opts O) {
	if stale, _ := st.keep(opts); len(stale) > 0 {
		go func() {
			for _, sp := range stale {
				st.stop(sp, "its option set is no longer wanted")
			}
		}()
	}
}

// keep makes opts the newest wanted option set and takes the spares of
// the sets no longer wanted off the list, to be stopped (Close waits for
// them); false when no spare can serve opts.
func (st *Spares[O]) keep(opts O) (stale []*Spare, ok bool) {
	po, ok := st.cfg.Options(opts)
	if !ok {
		return nil, false
	}
	key := SpareKey(po)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.recent = slices.DeleteFunc(st.recent, func(w want[O]) bool { return w.key == key })
	st.recent = append([]want[O]{{key, opts}}, st.recent...)
	if len(st.recent) > st.cfg.Sets {
		st.recent = st.recent[:st.cfg.Sets]
	}
	st.ready = slices.DeleteFunc(st.ready, func(sp *Spare) bool {
		if !st.wanted(sp.key) {
			stale = append(stale, sp)
			if sp.timer != nil {
				sp.timer.Stop()
			}
			return true
		}
		return false
	})
	st.stopping += len(stale)
	return stale, true
}

// Fill starts a spare for each wanted option set that has none.
func (st *Spares[O]) Fill() {
	st.mu.Lock()
	var todo []want[O]
	for _, w := range st.recent {
		has := st.starting[w.key] || slices.ContainsFunc(st.ready, func(sp *Spare) bool { return sp.key == w.key })
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
			st.start(w)
		}()
	}
}

// start starts one spare, when a live place is free (it never makes a
// session dormant).
func (st *Spares[O]) start(w want[O]) {
	if st.cfg.Begin != nil {
		st.cfg.Begin()
	}
	if st.cfg.End != nil {
		defer st.cfg.End()
	}
	done := func() {
		st.mu.Lock()
		delete(st.starting, w.key)
		st.mu.Unlock()
	}
	po, ok := st.cfg.Options(w.opts)
	if !ok || SpareKey(po) != w.key {
		done()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), st.cfg.StartTimeout)
	defer cancel()
	sp := &Spare{set: st, key: w.key, sessionID: uuid.NewString(), cancel: cancel, started: make(chan struct{})}
	defer close(sp.started)
	if !st.cfg.Pool.TryAcquire(sp) {
		done()
		return
	}
	po.SessionID = sp.sessionID
	po.OnControlRequest = sp.onControl
	p, resp, err := st.cfg.Start(ctx, po, st.cfg.Log.With("spare", w.key))
	if err != nil {
		st.cfg.Pool.Release(sp)
		done()
		st.cfg.Log.Debug("starting a warm spare", "err", err)
		return
	}
	sp.proc, sp.resp = p, resp
	st.mu.Lock()
	delete(st.starting, w.key)
	if st.closed {
		st.stopping++
		st.mu.Unlock()
		st.stop(sp, "shutting down")
		return
	}
	if !st.wanted(w.key) {
		// Another option set replaced it while it started.
		st.stopping++
		st.mu.Unlock()
		st.stop(sp, "its option set is no longer wanted")
		st.Fill() // its live place may be what the wanted one lacked
		return
	}
	st.ready = append(st.ready, sp)
	if d := st.cfg.IdleTimeout; d > 0 {
		sp.timer = time.AfterFunc(d, func() { st.stopIfReady(sp, "idle timeout") })
	}
	st.mu.Unlock()
	st.cfg.Log.Debug("warm spare ready", "pid", p.PID(), "key", w.key)
	go func() { // a spare that dies before it is taken gives its place back
		<-p.Done()
		if st.drop(sp) {
			st.cfg.Log.Debug("a warm spare ended before it was taken", "err", p.Wait())
			st.stop(sp, "it ended")
		}
	}()
}

// Take hands a ready spare of key to the holder to, or returns nil. The
// spare's live place becomes to's, and onControl answers its process's
// control requests from now on. Starting a new spare behind it (Fill or
// DeferRefill) is the caller's choice.
func (st *Spares[O]) Take(key string, to Holder, onControl claudeagent.ControlHandler) *Spare {
	st.mu.Lock()
	i := slices.IndexFunc(st.ready, func(sp *Spare) bool { return sp.key == key })
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
		st.cfg.Pool.Release(sp)
		return nil
	default:
	}
	if !st.cfg.Pool.Handover(sp, to) {
		// to's owner has its live processes already: the spare stays.
		st.mu.Lock()
		st.ready = append(st.ready, sp)
		st.mu.Unlock()
		return nil
	}
	sp.taker.Store(&onControl)
	return sp
}

// DeferRefill starts the spares when the next turn ends (see
// RefillAfterTurn), or after refillDelay at the latest.
func (st *Spares[O]) DeferRefill() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.refill == nil {
		st.refill = time.AfterFunc(refillDelay, st.RefillAfterTurn)
	}
}

// RefillAfterTurn starts the spares a deferred refill is waiting for, if
// any. A query calls it when its turn is over.
func (st *Spares[O]) RefillAfterTurn() {
	st.mu.Lock()
	t := st.refill
	st.refill = nil
	st.mu.Unlock()
	if t != nil {
		t.Stop()
		go st.Fill()
	}
}

// drop removes a ready spare from the list, to be stopped (see stop);
// false when it was taken or dropped already.
func (st *Spares[O]) drop(sp *Spare) bool {
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

// stopIfReady stops a spare that was not taken meanwhile.
func (st *Spares[O]) stopIfReady(sp *Spare, reason string) {
	if st.drop(sp) {
		st.stop(sp, reason)
	}
}

// stop stops a spare that drop took off the list, and frees its place.
func (st *Spares[O]) stop(sp *Spare, reason string) {
	st.cfg.Log.Debug("stopping a warm spare", "reason", reason, "pid", sp.proc.PID())
	_ = sp.proc.Close()
	<-sp.proc.Done()
	st.cfg.Pool.Release(sp)
	st.mu.Lock()
	st.stopping--
	st.stopped.Broadcast()
	st.mu.Unlock()
}

// Close stops every spare, waiting for those being started or stopped,
// and starts no more.
func (st *Spares[O]) Close() {
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
		wg.Go(func() { st.stop(sp, "shutting down") })
	}
	wg.Wait()
	st.mu.Lock()
	for st.stopping > 0 {
		st.stopped.Wait()
	}
	st.mu.Unlock()
}

// Snapshot is what the spares hold at one moment.
type Snapshot struct {
	Wanted   []string // the keys of the option sets spares are kept for, newest first
	Starting int      // spares being started
	Ready    []*Spare // oldest first
}

// Snapshot reports the spares as they are.
func (st *Spares[O]) Snapshot() Snapshot {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := Snapshot{Starting: len(st.starting), Ready: slices.Clone(st.ready)}
	for _, w := range st.recent {
		s.Wanted = append(s.Wanted, w.key)
	}
	return s
}
