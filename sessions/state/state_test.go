package state

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

var errBusy = errors.New("busy")

func newMachine() (*Machine, *sync.Mutex, *[]Move) {
	var mu sync.Mutex
	var made []Move
	m := New(&mu, func(from, to State) { made = append(made, Move{from, to}) })
	return m, &mu, &made
}

// TestMoves: closed is final, failed only closes, setting a state again is
// no move; every move reaches OnMove, one the table lacks too.
func TestMoves(t *testing.T) {
	m, _, made := newMachine()
	for _, to := range []State{Idle, Idle, Running, Queued, Failed, Idle, Closed, Starting} {
		m.Move(to)
	}
	want := []Move{{Starting, Idle}, {Idle, Running}, {Running, Queued}, {Queued, Failed}, {Failed, Closed}}
	if !slices.Equal(*made, want) {
		t.Errorf("moves %v, want %v", *made, want)
	}
	if m.State() != Closed {
		t.Errorf("state %s, want closed", m.State())
	}
	for _, mv := range []Move{{Running, Queued}, {Queued, Failed}, {Closed, Starting}, {Failed, Idle}} {
		if Allowed(mv.From, mv.To) {
			t.Errorf("the table allows %s", mv)
		}
	}
	for _, mv := range Moves() {
		if !Allowed(mv.From, mv.To) {
			t.Errorf("Moves lists %s, which the table does not allow", mv)
		}
	}
}

// enter runs Enter in the background; its error arrives on the channel.
func enter(ctx context.Context, m *Machine, wait time.Duration) chan error {
	done := make(chan error, 1)
	go func() { done <- m.Enter(ctx, errBusy, wait) }()
	return done
}

// TestEnter: the admission of a query (see State).
func TestEnter(t *testing.T) {
	ctx := context.Background()
	t.Run("second_refused", func(t *testing.T) {
		m, _, _ := newMachine()
		m.Move(Idle)
		if err := m.Enter(ctx, errBusy, time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := m.Enter(ctx, errBusy, time.Hour); !errors.Is(err, errBusy) {
			t.Errorf("a second query: %v, want busy", err)
		}
	})
	// A query behind an interrupting one waits for its end: sessions'
	// TestStateAdmission (waits_for_interrupt) holds that, with the order of
	// the calls fixed by a real turn; here only the bound of that wait,
	// which it waits to the nanosecond (synctest's time).
	t.Run("behind_interrupt_too_long", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m, _, _ := newMachine()
			m.Move(Running)
			if err := m.Enter(ctx, errBusy, time.Hour); err != nil {
				t.Fatal(err)
			}
			m.Move(Interrupting)
			const bound = time.Minute
			start := time.Now()
			if err := m.Enter(ctx, errBusy, bound); !errors.Is(err, errBusy) {
				t.Errorf("a query behind an interrupt that does not end: %v, want busy", err)
			}
			if d := time.Since(start); d != bound {
				t.Errorf("a query behind an interrupt that does not end was refused after %s, want its bound %s", d, bound)
			}
		})
	})
	// A query that comes while the owner records its ended turn waits for
	// it, and is admitted once it lets the session go; the next query is
	// refused as before.
	t.Run("behind_ended_turn", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m, mu, _ := newMachine()
			m.Move(Running)
			if err := m.Enter(ctx, errBusy, time.Hour); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			m.EndedLocked()
			m.MoveLocked(Idle)
			mu.Unlock()
			ctx, cancel := context.WithCancel(ctx)
			t.Cleanup(cancel) // a failed test's query stops waiting: the bubble ends
			done := enter(ctx, m, time.Hour)
			synctest.Wait() // Enter returned, or waits for a change
			select {
			case err := <-done:
				t.Fatalf("a query behind an ended turn did not wait: %v", err)
			default:
			}
			m.Release()
			if err := <-done; err != nil {
				t.Fatalf("the query behind the ended turn: %v", err)
			}
			if err := m.Enter(ctx, errBusy, time.Hour); !errors.Is(err, errBusy) {
				t.Errorf("a query beside the admitted one: %v, want busy", err)
			}
		})
	})
	for _, who := range []Owner{Create, Dormancy} {
		synctest.Test(t, func(t *testing.T) {
			m, mu, _ := newMachine()
			if err := m.Own(ctx, who); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(ctx)
			t.Cleanup(cancel) // a failed test's query stops waiting: the bubble ends
			done := enter(ctx, m, time.Hour)
			synctest.Wait() // nothing signals that a query waits: it is blocked, or it returned
			if !waiting(m, mu) {
				t.Fatalf("owner %d: the query does not wait", who)
			}
			if err := m.Enter(ctx, errBusy, time.Hour); !errors.Is(err, errBusy) {
				t.Errorf("owner %d: a second query while the first waits: %v, want busy", who, err)
			}
			m.Release()
			if err := <-done; err != nil {
				t.Errorf("owner %d: the waiting query: %v", who, err)
			}
			mu.Lock()
			if m.Owner() != Query || m.Waiting() {
				t.Errorf("owner %d: after: owner %d, waiting %v; want the query, nobody waiting", who, m.Owner(), m.Waiting())
			}
			mu.Unlock()
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		m, _, _ := newMachine()
		if err := m.Own(ctx, Create); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		done := enter(cctx, m, time.Hour)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("a cancelled query: %v", err)
		}
	})
}

func waiting(m *Machine, mu *sync.Mutex) bool {
	mu.Lock()
	defer mu.Unlock()
	return m.Waiting()
}

// TestOwn: a create waits while another owns the session.
func TestOwn(t *testing.T) {
	m, mu, _ := newMachine()
	if err := m.Own(context.Background(), Dormancy); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Own(context.Background(), Create) }()
	m.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if m.Owner() != Create {
		t.Errorf("owner %d, want the create", m.Owner())
	}
}
