package sessions

import (
	"context"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/tracing"
)

// A session's query runs: package run keeps the record of each; here it
// is bound to its session — started on it, made the session's current
// run, and its release closing a temporary or closeAfter session.

// Session is the run's session.
func (r *Run) Session() *Session { return r.session }

// StartRun starts a query run in the background and returns once its turn has
// started or it waits for a usage limit's reset (or after
// QueryOptions.ReturnAfter), or with the error that kept it
// from starting (a busy session is refused at once). Cancelling ctx before the turn starts cancels the run;
// afterwards only [Run.Cancel] does. A temporary session whose query cannot
// start is discarded (see oneshot.go).
func (s *Session) StartRun(ctx context.Context, prompt string, o QueryOptions) (*Run, error) {
	rctx, cancel := context.WithCancel(tracing.Carry(context.Background(), ctx)) // the call's span, not its end
	r := newRun(runConfig{Prompt: prompt, Thinking: o.IncludeThinking, Listener: o.Listener, Watchers: o.Watchers, Cancel: cancel,
		DropAfter: s.m.cfg.DropAfter, Release: func() { s.releaseRun(o.CloseAfter) }, Log: s.log.Info})
	r.session = s
	qo := o
	qo.OnEvent = r.OnEvent
	if qo.AskPermission == nil && qo.QueueQuestions {
		qo.AskPermission = r.Queue
	}
	go func() {
		defer cancel()
		r.Finish(s.Query(rctx, prompt, qo))
	}()
	var early <-chan time.Time
	if o.ReturnAfter > 0 {
		t := time.NewTimer(o.ReturnAfter)
		defer t.Stop()
		early = t.C
	}
	select {
	case <-r.TurnStarted():
	case <-early:
	case <-r.Done():
		if err := r.Err(); err != nil {
			s.m.endUnstarted(s, err) // a one-shot's query could not start
			return nil, err
		}
	case <-ctx.Done():
		cancel()
		<-r.Done()
		s.m.endUnstarted(s, ctx.Err())
		return nil, ctx.Err()
	}
	s.mu.Lock()
	old := s.run
	s.run = r
	s.mu.Unlock()
	if old != nil {
		old.Supersede()
	}
	return r, nil
}

// releaseRun closes the session once its run's result is collected or
// dropped, when the run asked for that (closeAfter) or the session is a
// one-shot's (see oneshot.go).
func (s *Session) releaseRun(closeAfter bool) {
	s.mu.Lock()
	following := s.followUp != nil // its run's release ends the one-shot
	s.mu.Unlock()
	switch {
	case s.opts.Temporary && following:
	case s.opts.Temporary:
		s.m.endOneShot(s)
	case closeAfter:
		_, _ = s.m.Close(s.ID)
	}
}

// CurrentRun returns the session's latest run whose result was not
// collected yet (running or finished), or nil.
func (s *Session) CurrentRun() *Run {
	s.mu.Lock()
	r, follow := s.run, s.followRun
	s.mu.Unlock()
	if r != nil && !r.Collected() {
		return r
	}
	if follow != nil && !follow.Collected() {
		return follow // a follow-up's, once the query's was collected (steer.go)
	}
	return nil
}
