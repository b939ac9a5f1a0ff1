// Package sharing is this server instance's part in a session registry
// that other instances may share: its name and the claims it holds on
// sessions with their lease and renewal, the record of each session as of
// the last merge (the merge's base), what it closed and spent since, the
// owners the registry held at its last look, and what the sessions cost in
// all. It brings the manager's records to a merge (store.Merge) and hands
// the outcome back: the records to take over, the sessions closed
// elsewhere, the claims lost.
//
// It knows the store's records (package store); it must not know
// sessions, processes or MCP: the manager gives it records (store.Local)
// and acts on the outcome (takes records over, drops sessions, kills the
// processes of lost claims) through the small Host interface: Sync
// merges, Look looks at the registry again, Fence checks a claim before a
// process is used, Restore and Adopt take sessions up. Without a store it still keeps the costs and
// the sessions closed here.
package sharing

import (
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// Config configures an Instance.
type Config struct {
	// Store is the registry; nil for none.
	Store store.Store
	// Path names the registry in logs.
	Path string
	// Lease is how long a claim holds without renewal; 0 means
	// $CLAUDE_AGENT_MCP_LEASE (a testing knob), else 60 s.
	Lease time.Duration
	// Now is the clock of claims and tombstones; nil is time.Now.
	Now func() time.Time
	Log *slog.Logger
	// ErrClosed is what Sync's error wraps for a session another instance
	// closed.
	ErrClosed error
	// OnTakeover, if set, is told of each lapsed claim of another instance
	// that a write of this one broke (store.Merged.Broken), once written.
	OnTakeover func()
}

// Instance is this instance's part in the registry. Its methods are safe
// for concurrent use. Lock order: the lock that orders merges and
// adoptions (held while Sync, Look, Restore and Adopt call back) comes before
// the manager's and its sessions' locks; the others are taken alone.
type Instance struct {
	cfg          Config
	me           store.Claim   // this instance; Gen and Until are set at each write
	lease, renew time.Duration // a claim's lease, and how often claims are renewed

	// saveMu orders merges (one at a time, so that no cost is added twice)
	// and adoptions. Under it: base is store.Merge.Base, lastSync the wall
	// time of the last merge.
	saveMu   sync.Mutex
	base     map[string]string
	lastSync time.Time

	// costMu guards what the next merge brings into the store, the costs
	// and the last write's error.
	costMu      sync.Mutex
	closed      []store.Closing    // sessions closed here
	unsaved     float64            // costs not yet added to the store's totals
	userUnsaved map[string]float64 // likewise per owner
	holding     bool               // the last merge left claims of this instance in the store
	spent       float64            // what every turn has cost, also of closed sessions (and before a restart, and on other instances as of the last merge)
	userSpent   map[string]float64 // likewise per owner
	writeErr    error              // of the last registry write

	// mu guards what follows; no other lock is taken under it.
	mu            sync.Mutex
	held          map[string]store.Held // this instance's claims, by session id
	seen          store.Stamp           // the store as this instance last read or wrote it
	fileOwner     map[string]string     // the open sessions in the store then: id → owner
	pendingClosed map[string]bool       // closed here, tombstone not yet written
	closedHere    []store.Closing       // the sessions closed here lately, oldest first (at most DefaultMaxTombstones)

	stopOnce sync.Once
	stop     chan struct{} // stops the renewal of claims
	done     chan struct{} // closed when the renewal has stopped
}

// New returns this instance's part in cfg.Store, named (an instance id,
// the host, the pid) when there is a store.
func New(cfg Config) *Instance {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	sh := &Instance{cfg: cfg}
	if cfg.Store == nil {
		return sh
	}
	host, _ := os.Hostname()
	pidns, _ := os.Readlink("/proc/self/ns/pid")
	sh.me = store.Claim{Instance: uuid.NewString(), Host: host, PIDNS: pidns, PID: os.Getpid()}
	sh.base, sh.lastSync = map[string]string{}, cfg.Now().Round(0).UTC()
	sh.held = map[string]store.Held{}
	sh.setLease()
	return sh
}

// Shared reports whether there is a registry.
func (sh *Instance) Shared() bool { return sh.cfg.Store != nil }

// Start starts renewing this instance's claims: persist (which merges) is
// called every renewal interval while the last merge left claims of this
// instance in the store.
func (sh *Instance) Start(persist func()) {
	if sh.cfg.Store == nil {
		return
	}
	sh.stop, sh.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sh.done)
		t := time.NewTicker(sh.renew)
		defer t.Stop()
		for {
			select {
			case <-sh.stop:
				return
			case <-t.C:
				sh.costMu.Lock()
				holding := sh.holding
				sh.costMu.Unlock()
				if holding {
					persist()
				}
			}
		}
	}()
}

// Stop stops the renewal of claims (see Start) and waits for it.
func (sh *Instance) Stop() {
	if sh.stop == nil {
		return
	}
	sh.stopOnce.Do(func() {
		close(sh.stop)
		<-sh.done
	})
}

// Spent is what every turn has cost so far, closed sessions included.
func (sh *Instance) Spent() float64 {
	sh.costMu.Lock()
	defer sh.costMu.Unlock()
	return sh.spent
}

// UserSpent is what owner's sessions have cost so far.
func (sh *Instance) UserSpent(owner string) float64 {
	sh.costMu.Lock()
	defer sh.costMu.Unlock()
	return sh.userSpent[owner]
}

// AddSpent adds what a turn of owner's ("" for none) cost.
func (sh *Instance) AddSpent(owner string, usd float64) {
	sh.costMu.Lock()
	defer sh.costMu.Unlock()
	sh.spent += usd
	sh.unsaved += usd
	if owner != "" {
		if sh.userSpent == nil {
			sh.userSpent = map[string]float64{}
		}
		sh.userSpent[owner] += usd
		if sh.userUnsaved == nil {
			sh.userUnsaved = map[string]float64{}
		}
		sh.userUnsaved[owner] += usd
	}
}

// Failing reports whether the last write of the registry failed.
func (sh *Instance) Failing() bool {
	sh.costMu.Lock()
	defer sh.costMu.Unlock()
	return sh.writeErr != nil
}

// Closed notes that a session the registry keeps was closed here: for
// ConversationOwner, and as a tombstone written with the next merge.
func (sh *Instance) Closed(n store.Closing) {
	sh.noteClosed(n)
	if sh.cfg.Store == nil {
		return
	}
	sh.mu.Lock()
	if sh.pendingClosed == nil {
		sh.pendingClosed = map[string]bool{}
	}
	sh.pendingClosed[n.ID] = true
	sh.mu.Unlock()
	sh.costMu.Lock()
	sh.closed = append(sh.closed, n)
	sh.costMu.Unlock()
}

// ClosedTemporary notes that a session the registry does not keep was
// closed here: for ConversationOwner only.
func (sh *Instance) ClosedTemporary(n store.Closing) { sh.noteClosed(n) }

func (sh *Instance) noteClosed(n store.Closing) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.closedHere = append(sh.closedHere, n)
	if extra := len(sh.closedHere) - store.DefaultMaxTombstones; extra > 0 {
		sh.closedHere = slices.Delete(sh.closedHere, 0, extra)
	}
}

// CountOwned adds to ids the open sessions of owner the registry held at
// this instance's last look (other instances'), but except and those
// closed here whose tombstone is not written yet.
func (sh *Instance) CountOwned(owner, except string, ids map[string]bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for id, o := range sh.fileOwner {
		if o == owner && id != except && !sh.pendingClosed[id] {
			ids[id] = true
		}
	}
}

// ConversationOwner reports who made the Claude conversation id, as far
// as the sessions closed here lately and then the registry know (see
// store.State.ConversationOwner); the manager looks at its open sessions
// first.
func (sh *Instance) ConversationOwner(id string) (owner string, known bool) {
	sh.mu.Lock()
	for _, n := range slices.Backward(sh.closedHere) {
		if slices.Contains(n.ClaudeSessionIDs, id) {
			sh.mu.Unlock()
			return n.Owner, true
		}
	}
	sh.mu.Unlock()
	if sh.cfg.Store == nil {
		return "", false
	}
	st, _, err := sh.cfg.Store.Read()
	if err != nil {
		sh.cfg.Log.Warn("reading the session registry", "path", sh.cfg.Path, "err", err)
	}
	return st.ConversationOwner(id)
}
