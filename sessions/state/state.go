// Package state is a session's state machine: where a session is in its
// life (State, with the table of the moves it may make) and who drives its
// process (Owner), and the admission of a query beside another (Enter).
// A Machine holds both under its session's lock, and every change wakes
// whoever waits for one.
//
// It knows states, owners and a lock; it must not know sessions,
// processes, turns, the store or MCP: what a state means for a process
// is the session's, and so is what a move the table lacks means (the
// Machine reports every move to its OnMove).
package state

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// State is where a session is in its life. One lock discipline guards a
// session: its lock (Session.mu), and nothing else, guards its state and
// its owner (who drives its process: nobody, its create, a query, its
// dormancy); every change of either wakes whoever waits for one. The
// transitions (closed is final, failed only closes; a state may be set
// again, a no-op):
//
//	from          to            when
//	starting      idle          the process is up (a create's, or a query's start)
//	starting      queued        no live place is free (--max-live): the query waits its turn
//	queued        starting      a live place came free
//	starting      dormant       a create found every live place busy, the store's lease
//	                            or the start failed for a reason a retry may mend
//	starting      refused       the policy of today (or the allowed roots) refuses it
//	starting      failed        its resume failed for a reason a retry does not mend
//	idle          running       a query's turn begins on the live process
//	running       interrupting  Interrupt, a cancelled call, the query timeout
//	running       idle          the turn ends
//	interrupting  idle          the interrupted turn ends, the process live
//	interrupting  dormant       the interrupted turn ends, its process gone (stopped: it
//	                            did not acknowledge the interrupt)
//	running       dormant       the process ends during the turn
//	idle          dormant       its process ends or is stopped (idle timeout, --max-live,
//	                            --user-max-live, fencing)
//	dormant       starting      a query starts it (resume)
//	dormant       refused       a query finds that the policy of today refuses it
//	refused       starting      a query finds that the policy lets it run again
//	any           closed        Close (during a start: the start stops its process)
//
// A restored or adopted session starts as starting and becomes dormant or
// refused at once. A session's Info reports interrupting as running: the
// turn has not ended.
//
// Who may drive the process (Owner), under the same lock: a query is
// admitted as the owner (Machine.Enter) when nobody owns the session;
// beside another query it is refused at once, unless that query's turn is
// interrupting — then it waits for that query's end (a host such as Claude
// Code sends its next call without waiting for the cancel's answer). While
// a create starts the first process, or dormancy stops an idle one, the
// first query waits for them (and a second is refused). Dormancy takes only
// an idle session nobody owns. Close and Shutdown own nothing: they mark the
// state first (closed) or interrupt the running turn, so no start goes on
// behind them.
type State string

// The states.
const (
	Starting     State = "starting"     // its process is starting
	Idle         State = "idle"         // live, no query running
	Queued       State = "queued"       // a query waits for a live process (--max-live)
	Running      State = "running"      // a query is running
	Interrupting State = "interrupting" // the running query's turn is being interrupted (Info: running)
	Dormant      State = "dormant"      // no process; the next query resumes it
	Refused      State = "refused"      // the server's policy no longer lets it run; checked again at each query
	Failed       State = "failed"       // it cannot be resumed
	Closed       State = "closed"
)

// transitions are the moves the table above allows, to closed aside
// (always allowed).
var transitions = map[State][]State{
	Starting:     {Idle, Queued, Dormant, Refused, Failed},
	Queued:       {Starting},
	Idle:         {Running, Dormant},
	Running:      {Interrupting, Idle, Dormant},
	Interrupting: {Idle, Dormant},
	Dormant:      {Starting, Refused},
	Refused:      {Starting},
	Failed:       nil,
	Closed:       nil,
}

// Move is one change of state.
type Move struct{ From, To State }

func (mv Move) String() string { return string(mv.From) + "→" + string(mv.To) }

// Allowed reports whether the table lets a session move from one state to
// another.
func Allowed(from, to State) bool {
	return from != Closed && (to == Closed || from == to || slices.Contains(transitions[from], to))
}

// Moves are the moves of the table: its rows, and the move of every state
// but closed to closed.
func Moves() []Move {
	var out []Move
	for from, tos := range transitions {
		for _, to := range tos {
			out = append(out, Move{from, to})
		}
		if from != Closed {
			out = append(out, Move{from, Closed})
		}
	}
	return out
}

// Owner is who drives a session's process at the moment.
type Owner uint8

// The owners.
const (
	Nobody   Owner = iota
	Create         // a create starts the first process
	Query          // a query, from its admission to its end
	Dormancy       // dormancy stops the idle process
)

// Machine is a session's state and owner, guarded by the session's lock.
// Methods named …Locked, State and Owner need the lock held; the others
// take it.
type Machine struct {
	mu      *sync.Mutex
	onMove  func(from, to State)
	state   State
	owner   Owner
	owned   uint64        // how many times the session was owned: which ownership this is
	ended   uint64        // the ownership whose turn has ended and which records it (EndedLocked)
	waiting bool          // a query waits for a create or dormancy to end
	changed chan struct{} // closed and replaced when state or owner change
}

// New is the machine of a session guarded by mu, starting; onMove sees
// every move it makes, allowed by the table or not, with mu held.
func New(mu *sync.Mutex, onMove func(from, to State)) *Machine {
	return &Machine{mu: mu, onMove: onMove, state: Starting, changed: make(chan struct{})}
}

// State is where the session is; the lock is held.
func (m *Machine) State() State { return m.state }

// Owner is who drives the process now; the lock is held.
func (m *Machine) Owner() Owner { return m.owner }

// Waiting reports whether a query waits for a create or dormancy to end;
// the lock is held.
func (m *Machine) Waiting() bool { return m.waiting }

// MoveLocked moves the session to state to: closed is final, failed only
// closes. A move the table does not allow is a bug: OnMove sees it, and it
// is made all the same. The lock is held.
func (m *Machine) MoveLocked(to State) {
	from := m.state
	if from == to || from == Closed || (from == Failed && to != Closed) {
		return
	}
	if m.onMove != nil {
		m.onMove(from, to)
	}
	m.state = to
	m.signalLocked()
}

// Move is MoveLocked with the lock taken.
func (m *Machine) Move(to State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.MoveLocked(to)
}

// signalLocked wakes everyone waiting for a change; the lock is held.
func (m *Machine) signalLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// SetOwnerLocked makes who the owner; the lock is held.
func (m *Machine) SetOwnerLocked(who Owner) {
	m.owner, m.ended = who, 0
	if who != Nobody {
		m.owned++
	}
	m.signalLocked()
}

// EndedLocked notes that the owning query's turn has ended: it only
// records the turn before it lets the session go, so a query that comes
// meanwhile waits for it as behind an interrupted one, rather than being
// refused as busy. The lock is held.
func (m *Machine) EndedLocked() { m.ended = m.owned }

// Release gives the session back: nobody owns it.
func (m *Machine) Release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.SetOwnerLocked(Nobody)
}

// Own makes who the owner, waiting while somebody else is (as ctx allows).
// A create uses it; queries are admitted by Enter.
func (m *Machine) Own(ctx context.Context, who Owner) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.owner != Nobody {
		if err := m.waitChangeLocked(ctx, nil); err != nil {
			return err
		}
	}
	m.SetOwnerLocked(who)
	return nil
}

// Enter admits a query as the owner (see State): at once when nobody owns
// the session; refused with busy beside another query, unless that
// query's turn is interrupting or has ended (EndedLocked) — then it waits
// for that query's end, at most interruptWait; waiting while a create or
// dormancy owns it (a later query is refused meanwhile).
func (m *Machine) Enter(ctx context.Context, busy error, interruptWait time.Duration) error {
	var limit <-chan time.Time
	m.mu.Lock()
	defer m.mu.Unlock()
	var behind uint64 // the ownership this query waits behind (an interrupted query's)
	waiting := false  // this query set m.waiting
	defer func() {
		if waiting {
			m.waiting = false
		}
	}()
	for {
		switch {
		case m.waiting && !waiting: // another query waits for its turn
			return busy
		case m.owner == Nobody:
			m.SetOwnerLocked(Query)
			return nil
		case m.owner == Query && m.state != Interrupting && m.owned != behind && m.ended != m.owned:
			return busy
		case m.owner == Query: // interrupting, or recording its turn: wait until that query ends
			behind = m.owned
			if limit == nil {
				t := time.NewTimer(interruptWait)
				defer t.Stop()
				limit = t.C
			}
		default: // a create or dormancy: it ends soon
			m.waiting, waiting = true, true
		}
		switch err := m.waitChangeLocked(ctx, limit); {
		case errors.Is(err, errWaitLimit):
			return busy
		case err != nil:
			return err
		}
	}
}

// errWaitLimit is waitChangeLocked's error when limit fired.
var errWaitLimit = errors.New("waited too long")

// waitChangeLocked waits, the lock released meanwhile, until the state or
// the owner changes, ctx ends (its error) or limit fires (errWaitLimit;
// nil waits without one). The lock is held on entry and on return.
func (m *Machine) waitChangeLocked(ctx context.Context, limit <-chan time.Time) error {
	changed := m.changed
	m.mu.Unlock()
	defer m.mu.Lock()
	select {
	case <-changed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-limit:
		return errWaitLimit
	}
}
