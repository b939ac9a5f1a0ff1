// Package fleet is this server instance's part in a session store
// (package store) that other instances may share: the leases it holds
// on sessions whose process runs here, with their renewal and fencing, the
// changes other instances announce (Watch), the transcripts it copies into
// the store as they grow, and what the sessions cost. Without a store it
// keeps the costs and the sessions closed here in memory.
//
// It knows records (store.Record), not sessions, processes or MCP: the
// manager hands it records and acts on what it reports through Host.
package fleet

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// Host is the manager as the store's changes and the leases reach it.
type Host interface {
	// Drop closes here the session id, which another instance closed.
	Drop(id string)
	// FenceOff kills the process of session id, whose lease passed to
	// another instance, and fails its running turn with why.
	FenceOff(id string, why error)
	// Held returns the ids of the sessions held here (a resync looks
	// at each again).
	Held() []string
}

// Config configures an Instance.
type Config struct {
	// Store is the session store; nil keeps costs in memory only.
	Store store.Store
	// Lease is how long a lease holds without renewal; 0 means
	// $CLAUDE_AGENT_MCP_LEASE (a testing knob), else DefaultLease.
	Lease time.Duration
	// OnTakeover, if set, is told of each lease of another instance that
	// lapsed and was taken over here.
	OnTakeover func()
	// ErrClosed is what a lease's error wraps for a session another
	// instance closed.
	ErrClosed error
	Log       *slog.Logger
}

// Instance is this instance's part in the store. Its methods are safe for
// concurrent use; its locks are taken alone, never while calling Host.
type Instance struct {
	cfg          Config
	holder       string        // this instance, as its leases name it
	lease, renew time.Duration // a lease's length, and how often leases are renewed
	failing      atomic.Bool   // the last write of a record failed

	mu         sync.Mutex
	held       map[string]*held  // the leases held here, by session id
	offsets    map[string]int64  // what of each transcript is stored: id "/" claude session id → bytes
	tails      map[string][]byte // the last bytes stored of each transcript: a mark split between two saves is still found
	found      map[string]string // the last mark found in each stored transcript (SaveTranscript)
	spent      costs             // without a store: what every turn has cost
	owed       costs             // with one: the costs of turns whose Put has not run yet (Owe)
	closedHere []closing         // without a store: the sessions closed here lately, oldest first

	stopWatch context.CancelFunc
	watchDone chan struct{}

	sweepMu   sync.Mutex // one sweep of orphans at a time (orphans.go)
	stopSweep context.CancelFunc
	sweepDone chan struct{}
}

// closing is a session closed here: who made its conversations.
type closing struct {
	owner     string
	claudeIDs []string
}

// maxClosed bounds closedHere.
const maxClosed = 1000

// New returns this instance's part in cfg.Store.
func New(cfg Config) *Instance {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.ErrClosed == nil {
		cfg.ErrClosed = store.ErrClosed
	}
	host, _ := os.Hostname()
	i := &Instance{cfg: cfg, holder: host + "/" + uuid.NewString(), held: map[string]*held{}, offsets: map[string]int64{}, tails: map[string][]byte{}, found: map[string]string{}}
	i.setLease()
	return i
}

// Stored reports whether there is a store.
func (i *Instance) Stored() bool { return i.cfg.Store != nil }

// Holder names this instance in its leases.
func (i *Instance) Holder() string { return i.holder }

// Failing reports whether the last write of a record failed.
func (i *Instance) Failing() bool { return i.failing.Load() }

// wrote notes the outcome of a write of a record, logging when writes
// begin or stop failing.
func (i *Instance) wrote(id string, err error) error {
	if err != nil && errors.Is(err, store.ErrFenced) {
		return err // not the store's fault
	}
	was := i.failing.Swap(err != nil)
	switch {
	case err != nil && !was:
		i.cfg.Log.Error("writing the session store: sessions will not survive a restart until it can be written", "session_id", id, "err", err)
	case err == nil && was:
		i.cfg.Log.Info("the session store is written again")
	}
	return err
}

// Get returns the record of the open session id (see store.Store.Get).
func (i *Instance) Get(ctx context.Context, id string) (store.Record, error) {
	if i.cfg.Store == nil {
		return store.Record{}, store.ErrNotFound
	}
	return i.cfg.Store.Get(ctx, id)
}

// Create stores rec, a new session, within q (see store.Store.Create).
func (i *Instance) Create(ctx context.Context, rec store.Record, q store.Quota) error {
	if i.cfg.Store == nil {
		return nil
	}
	err := i.cfg.Store.Create(ctx, rec, q)
	if errors.Is(err, store.ErrQuota) {
		return err
	}
	return i.wrote(rec.SessionID, err)
}

// Put writes rec, under the lease held on it here if any, with spent (a
// turn's cost) added to the sums; a lease found passed on fences the
// session off (Host.FenceOff, through the caller) and is returned as
// store.ErrFenced. Without a store only the cost is counted.
func (i *Instance) Put(ctx context.Context, rec store.Record, spent float64) error {
	if i.cfg.Store == nil {
		i.AddSpent(rec.Owner, spent)
		return nil
	}
	l, lost := i.leaseOf(rec.SessionID)
	if lost != nil {
		return lost
	}
	err := i.cfg.Store.Put(ctx, rec, l, spent)
	if errors.Is(err, store.ErrFenced) {
		i.lose(rec.SessionID, err)
	}
	return i.wrote(rec.SessionID, err)
}

// Owe counts usd, a turn's cost that a Put will add to the store, until
// the caller takes it back (a negative usd) once that Put has run, written
// or not: Spent and UserSpent count it meanwhile. Without a store it does
// nothing (Put counts in memory at once).
func (i *Instance) Owe(owner string, usd float64) {
	if i.cfg.Store == nil || usd == 0 {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.owed.add(owner, usd)
}

// costs are sums of turns' costs, in all and by user.
type costs struct {
	all    float64
	byUser map[string]float64
}

func (c *costs) add(owner string, usd float64) {
	c.all += usd
	if owner == "" {
		return
	}
	if c.byUser == nil {
		c.byUser = map[string]float64{}
	}
	c.byUser[owner] += usd
	if math.Abs(c.byUser[owner]) < 1e-12 { // owed and settled: nothing left but rounding
		delete(c.byUser, owner)
	}
}

// AddSpent counts a turn's cost in memory (without a store).
func (i *Instance) AddSpent(owner string, usd float64) {
	if usd == 0 {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.spent.add(owner, usd)
}

// Close closes session id in the store, under the lease held on it here
// if any, which goes with it; claudeIDs are its conversations, remembered
// for ConversationOwner without a store (the store keeps them itself).
func (i *Instance) Close(ctx context.Context, id, owner string, claudeIDs []string) error {
	if i.cfg.Store == nil {
		i.mu.Lock()
		defer i.mu.Unlock()
		i.closedHere = append(i.closedHere, closing{owner: owner, claudeIDs: slices.Clone(claudeIDs)})
		if extra := len(i.closedHere) - maxClosed; extra > 0 {
			i.closedHere = slices.Delete(i.closedHere, 0, extra)
		}
		return nil
	}
	l, _ := i.leaseOf(id)
	i.forget(id)
	err := i.cfg.Store.CloseSession(ctx, id, l)
	if errors.Is(err, store.ErrFenced) {
		err = i.cfg.Store.CloseSession(ctx, id, store.Lease{})
	}
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrClosed) || errors.Is(err, store.ErrElsewhere) {
		return err
	}
	return i.wrote(id, err)
}

// List returns a page of the stored sessions.
func (i *Instance) List(ctx context.Context, q store.Query) (store.Page, error) {
	if i.cfg.Store == nil {
		return store.Page{}, nil
	}
	return i.cfg.Store.List(ctx, q)
}

// Count is the number of stored open sessions of owner ("" all).
func (i *Instance) Count(ctx context.Context, owner string) (int, error) {
	if i.cfg.Store == nil {
		return 0, nil
	}
	return i.cfg.Store.Count(ctx, owner)
}

// Spent is what every turn has cost, closed sessions included.
func (i *Instance) Spent() float64 {
	if i.cfg.Store == nil {
		i.mu.Lock()
		defer i.mu.Unlock()
		return i.spent.all
	}
	usd, err := i.cfg.Store.SpentTotal(context.Background())
	if err != nil {
		i.cfg.Log.Warn("reading the costs from the session store", "err", err)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return usd + i.owed.all
}

// UserSpent is what owner's sessions have cost.
func (i *Instance) UserSpent(owner string) float64 {
	if i.cfg.Store == nil {
		i.mu.Lock()
		defer i.mu.Unlock()
		return i.spent.byUser[owner]
	}
	usd, err := i.cfg.Store.Spent(context.Background(), owner)
	if err != nil {
		i.cfg.Log.Warn("reading the costs from the session store", "owner", owner, "err", err)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return usd + i.owed.byUser[owner]
}

// ConversationOwner reports who made the Claude conversation id, as far
// as the sessions closed here and the store know; the manager looks at
// the sessions it holds first.
func (i *Instance) ConversationOwner(id string) (owner string, known bool) {
	i.mu.Lock()
	for _, c := range slices.Backward(i.closedHere) {
		if slices.Contains(c.claudeIDs, id) {
			i.mu.Unlock()
			return c.owner, true
		}
	}
	i.mu.Unlock()
	if i.cfg.Store == nil {
		return "", false
	}
	owner, known, err := i.cfg.Store.ConversationOwner(context.Background(), id)
	if err != nil {
		i.cfg.Log.Warn("reading the session store", "err", err)
	}
	return owner, known
}
