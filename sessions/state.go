package sessions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// State is where a session is in its life. One lock discipline guards a
// session: Session.mu, and nothing else, guards its state and its owner
// (who drives its process: nobody, its create, a query, its dormancy);
// every change of either closes Session.changed, which is what anything
// waiting for the session waits on. The transitions (transitions below;
// closed is final, failed only closes; a state may be set again, a no-op):
//
//	from          to            when
//	starting      idle          the process is up (a create's, or a query's start)
//	starting      queued        no live place is free (--max-live): the query waits its turn
//	queued        starting      a live place came free
//	starting      dormant       a create found every live place busy, the registry's claim
//	                            or the start failed for a reason a retry may mend
//	starting      refused       the policy of today (or the allowed roots) refuses it
//	starting      failed        its resume failed for a reason a retry does not mend
//	idle          running       a query's turn begins on the live process (Session.claimProcess)
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
// refused at once. Info reports interrupting as running: the turn has not
// ended.
//
// Who may drive the process, also under mu: a query is admitted as the
// owner (Session.enter) when nobody owns the session; beside another
// query it is refused at once (ErrBusy), unless that query's turn is
// interrupting — then it waits for that query's end (a host such as Claude
// Code sends its next call without waiting for the cancel's answer). While
// a create starts the first process, or dormancy stops an idle one, the
// first query waits for them (and a second is refused). Dormancy takes only
// an idle session nobody owns. Close and Shutdown own nothing: they mark the
// state first (closed) or interrupt the running turn, so no start goes on
// behind them.
type State string

// Session states.
const (
	StateStarting     State = "starting"     // its process is starting
	StateIdle         State = "idle"         // live, no query running
	StateQueued       State = "queued"       // a query waits for a live process (--max-live)
	StateRunning      State = "running"      // a query is running
	StateInterrupting State = "interrupting" // the running query's turn is being interrupted (Info: running)
	StateDormant      State = "dormant"      // no process; the next query resumes it
	StateRefused      State = "refused"      // the server's policy no longer lets it run; checked again at each query
	StateFailed       State = "failed"       // it cannot be resumed
	StateClosed       State = "closed"
)

// transitions are the moves the table above allows, to closed aside
// (always allowed).
var transitions = map[State][]State{
	StateStarting:     {StateIdle, StateQueued, StateDormant, StateRefused, StateFailed},
	StateQueued:       {StateStarting},
	StateIdle:         {StateRunning, StateDormant},
	StateRunning:      {StateInterrupting, StateIdle, StateDormant},
	StateInterrupting: {StateIdle, StateDormant},
	StateDormant:      {StateStarting, StateRefused},
	StateRefused:      {StateStarting},
	StateFailed:       nil,
	StateClosed:       nil,
}

// allowed reports whether the table lets a session move from one state to
// another.
func allowed(from, to State) bool {
	return from != StateClosed && (to == StateClosed || from == to || slices.Contains(transitions[from], to))
}

// onMove, when set (by the tests, before any session exists), sees every
// move of a session's state, allowed or not; s.mu is held.
var onMove func(s *Session, from, to State)

// moveLocked moves the session to state to: closed is final, failed only
// closes. A move the table does not allow is a bug: it is logged (and the
// tests fail on it, see onMove) and made all the same. s.mu is held.
func (s *Session) moveLocked(to State) {
	from := s.state
	if from == to || from == StateClosed || (from == StateFailed && to != StateClosed) {
		return
	}
	if !allowed(from, to) {
		s.log.Error("a session state transition the table does not allow", "from", from, "to", to)
	}
	if onMove != nil {
		onMove(s, from, to)
	}
	s.state = to
	s.signalLocked()
}

// setState is moveLocked with s.mu taken.
func (s *Session) setState(st State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.moveLocked(st)
}

// owner is who drives a session's process at the moment.
type owner uint8

const (
	ownerNone     owner = iota
	ownerCreate         // Create starts the first process
	ownerQuery          // a query, from its admission to its end
	ownerDormancy       // makeDormant stops the idle process
)

// signalLocked wakes everyone waiting for a change of the session; s.mu is
// held.
func (s *Session) signalLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// setOwnerLocked makes who the owner; s.mu is held.
func (s *Session) setOwnerLocked(who owner) {
	s.owner = who
	if who != ownerNone {
		s.owned++
	}
	s.signalLocked()
}

// release gives the session back: nobody owns it.
func (s *Session) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setOwnerLocked(ownerNone)
}

// own makes who the owner, waiting while somebody else is (as ctx allows).
// Create uses it; queries are admitted by enter.
func (s *Session) own(ctx context.Context, who owner) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.owner != ownerNone {
		if err := s.waitChangeLocked(ctx, nil); err != nil {
			return err
		}
	}
	s.setOwnerLocked(who)
	return nil
}

// enter admits a query as the session's owner (see State): at once when
// nobody owns it; refused with ErrBusy beside another query, unless that
// query's turn is interrupting — then it waits for that query's end, at
// most the interrupt's acknowledgement time and the stop of a process that
// gives none; waiting while a create or dormancy owns it (a later query is
// refused meanwhile).
func (s *Session) enter(ctx context.Context) error {
	busy := fmt.Errorf("%w: session %s is already running a query", ErrBusy, s.ID)
	var limit <-chan time.Time
	s.mu.Lock()
	defer s.mu.Unlock()
	var behind uint64 // the ownership this query waits behind (an interrupted query's)
	waiting := false  // this query set s.waiting
	defer func() {
		if waiting {
			s.waiting = false
		}
	}()
	for {
		switch {
		case s.waiting && !waiting: // another query waits for its turn
			return busy
		case s.owner == ownerNone:
			s.setOwnerLocked(ownerQuery)
			return nil
		case s.owner == ownerQuery && s.state != StateInterrupting && s.owned != behind:
			return busy
		case s.owner == ownerQuery: // interrupting: wait until that query ends
			behind = s.owned
			if limit == nil {
				t := time.NewTimer(s.m.cfg.InterruptAck + 3*time.Second)
				defer t.Stop()
				limit = t.C
			}
		default: // a create or dormancy: it ends soon
			s.waiting, waiting = true, true
		}
		switch err := s.waitChangeLocked(ctx, limit); {
		case errors.Is(err, errWaitLimit):
			return busy
		case err != nil:
			return err
		}
	}
}

// errWaitLimit is waitChangeLocked's error when limit fired.
var errWaitLimit = errors.New("waited too long")

// waitChangeLocked waits, s.mu released meanwhile, until the state or the
// owner changes, ctx ends (its error) or limit fires (errWaitLimit; nil
// waits without one). s.mu is held on entry and on return.
func (s *Session) waitChangeLocked(ctx context.Context, limit <-chan time.Time) error {
	changed := s.changed
	s.mu.Unlock()
	defer s.mu.Lock()
	select {
	case <-changed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-limit:
		return errWaitLimit
	}
}
