package sessions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/images"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/live"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// Steering a running query (see package turn for what the CLI does with a
// message written into a running turn). Session.Steer writes it; when the
// turn's result leaves it unanswered, the pump makes the turn in which the
// CLI answers it the session's running turn at once (startFollowUp), with
// a run of its own that the session owns: the session stays running, the
// query that was steered returns its result (FollowUp set), and the
// follow-up's result is collected like any run's (CurrentRun, once the
// query's is). The session's ownership passes from the query to the
// follow-up (handOff), so that no other query can take the session — and
// the follow-up's answer — in between.

// ErrNotRunning: a message can be steered only into a running query.
var ErrNotRunning = errors.New("no running query")

// noFollowUpWait is how long a follow-up waits for its first message when
// the CLI does not name the messages its results answer (2.1.197): a
// message taken as unanswered that the CLI had folded after all gets no
// turn, and the follow-up ends empty rather than keep the session.
const noFollowUpWait = 3 * time.Second

// followUp is a turn the CLI runs for steered messages, and its run.
type followUp struct {
	after *turn.Turn // the turn whose messages it answers
	turn  *turn.Turn
	run   *Run
	named bool // the CLI names the messages its results answer
}

// Steer writes message (with imgs) into the session's running turn and
// returns once it is written. On a session without a running query it is
// refused with ErrNotRunning; past the turn's bound on steered messages
// (turn.TakeSteer: their count, and their bytes in all within
// Config.MaxSteerBytes) or the budgets a query would meet, it is refused
// too, saying which.
func (s *Session) Steer(ctx context.Context, message string, imgs []images.Image) error {
	if err := ValidatePrompt(message); err != nil {
		return err
	}
	if err := s.checkBudget(); err != nil {
		return err
	}
	s.steerMu.Lock() // the pump takes it to end a turn (see pump)
	defer s.steerMu.Unlock()
	s.mu.Lock()
	t, p, st, fu, tctx := s.cur, s.proc, s.st.State(), s.followUp, s.curTrace
	s.mu.Unlock()
	switch {
	case st == state.Queued:
		return fmt.Errorf("%w: session %s waits for a live process and its query has not started yet; steer it once it runs", ErrNotRunning, s.ID)
	case st == state.Interrupting:
		return fmt.Errorf("%w: session %s is interrupting its query; send the message with claude_chat_query once it is idle", ErrNotRunning, s.ID)
	case t == nil || p == nil || st != state.Running || isDone(t.Done()):
		return fmt.Errorf("%w: session %s is %s; send the message with claude_chat_query", ErrNotRunning, s.ID, s.Info().State)
	case fu != nil && fu.turn == t && !fu.named && !isDone(t.Seen()):
		return fmt.Errorf("%w: session %s is about to answer a message steered into it; steer again once its turn runs", ErrNotRunning, s.ID)
	}
	size := len(message)
	for _, im := range imgs {
		size += len(im.Data)
	}
	if err := t.TakeSteer(size, s.m.cfg.MaxSteerBytes); err != nil {
		return fmt.Errorf("%w; send it with claude_chat_query once the turn has ended", err)
	}
	id := uuid.NewString()
	sp := traceSteer(tctx, ctx, message)
	defer sp.End()
	t.AddSteer(id, message)
	if err := p.SendUserID(images.Content(message, imgs), id); err != nil {
		sp.Fail(err.Error())
		return fmt.Errorf("writing the message to claude: %w", err)
	}
	s.log.Info("a message was steered into the running turn", "bytes", len(message))
	return nil
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// endTurn ends t, whose result came: when the result left steered
// messages unanswered, the turn that answers them becomes the running
// turn first. The pump calls it with s.steerMu held.
func (s *Session) endTurn(t *turn.Turn) {
	if ids, texts := t.Unanswered(); len(ids) > 0 {
		s.startFollowUp(t, ids, texts)
	}
	t.Finish()
}

// startFollowUp makes the turn that answers the messages ids (steered into
// t, which ended without them) the running turn, with a run of its own.
func (s *Session) startFollowUp(t *turn.Turn, ids, texts []string) {
	rctx, cancel := context.WithCancel(context.Background())
	r := newRun(runConfig{Prompt: strings.Join(texts, "\n\n"), Steered: true, Cancel: cancel,
		DropAfter: s.m.cfg.DropAfter, Release: func() { s.releaseRun(false) }, Log: s.log.Info})
	r.session = s
	fu := &followUp{after: t, run: r, named: t.Named()}
	fu.turn = turn.NewFollowUp(ids, r.OnEvent, s.m.now)
	s.mu.Lock()
	s.cur, s.curAsk = fu.turn, r.Queue
	s.followUp = fu
	s.followRun = r
	s.mu.Unlock()
	s.log.Info("the CLI answers a steered message in a turn of its own", "messages", len(ids))
	if hook := s.m.onFollowUp.Load(); hook != nil {
		(*hook)(r)
	}
	go func() {
		defer cancel()
		r.Finish(s.runFollowUp(rctx, fu), nil)
	}()
}

// runFollowUp waits for the follow-up's turn — which owns the session
// from the end of the turn before on — and finishes it.
func (s *Session) runFollowUp(ctx context.Context, fu *followUp) *turn.Result {
	defer func() {
		s.handOff()
		s.m.pool.Idle()
		s.m.spareOn(live.TurnEnded, CreateOptions{})
	}()
	<-fu.after.Done()
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	fu.turn.Emit(turn.Event{Kind: turn.EventTurnStarted})
	if !fu.named {
		select {
		case <-fu.turn.Seen():
		case <-fu.turn.Done():
		case <-time.After(noFollowUpWait):
			fu.turn.Fail("no turn of its own came: the CLI answered the message in the turn before")
		}
	}
	dl := turn.NewDeadline(s.m.cfg.QueryTimeout)
	defer dl.Stop()
	dl.Arm(s.m.now())
	if p != nil {
		s.wait(ctx, fu.turn, p, dl)
	} else {
		<-fu.turn.Done() // the process ended: the pump failed the turn
	}
	return s.finish(fu.turn, turnEnd{started: fu.run.Started(), followUp: true})
}

// handOff ends a query's or follow-up's ownership of the session, unless
// a follow-up runs that takes it over.
func (s *Session) handOff() {
	s.mu.Lock()
	pending := s.followUp != nil
	s.mu.Unlock()
	if !pending {
		s.st.Release()
	}
}

// OnFollowUp sets what is told of a follow-up's run as it starts (the MCP
// side gives it its views); it is called on the session's pump goroutine
// and must not block.
func (m *Manager) OnFollowUp(f func(*Run)) { m.onFollowUp.Store(&f) }

// FollowText says that someone (a dashboard page, a call with a progress
// token) follows the session's turns' text as the model writes it: while
// anyone does, the CLI's text deltas are decoded and become
// turn.EventTextDelta events; else they are dropped as they are read.
// stop ends this follower's interest.
func (s *Session) FollowText() (stop func()) {
	s.mu.Lock()
	s.textFollowers++
	if s.proc != nil {
		s.proc.KeepPartials(true)
	}
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.textFollowers--
			if s.proc != nil {
				s.proc.KeepPartials(s.textFollowers > 0)
			}
			s.mu.Unlock()
		})
	}
}
