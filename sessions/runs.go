package sessions

import (
	"context"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/images"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/run"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// A session's query runs: package run keeps the record of each; here it
// is bound to its session — started on it, made the session's current
// run, and its release closing a temporary or closeAfter session.

// RunOptions tune a run.
type RunOptions struct {
	IncludeThinking bool
	Effort          string         // this query's effort (see QueryOptions)
	Images          []images.Image // sent with the prompt
	OnLimit         string         // what the query does at the usage limit (see QueryOptions)
	// CloseAfter closes the session once the result is collected (or
	// dropped).
	CloseAfter bool
	// Ask forwards a permission question to the caller at once (an
	// elicitation on a client that can take one at any time). When nil and
	// QueueQuestions is set, questions wait in the run for whoever serves
	// them (see [run.Run.Questions]); when both are unset nobody can be
	// asked and the manager's policy answers.
	Ask            func(ctx context.Context, req *turn.PermissionRequest) (*claudeagent.PermissionResult, error)
	QueueQuestions bool
	// Listener receives the turn's events from the first one on, until it
	// is detached or replaced (see [run.Run.Attach]).
	Listener run.Listener
	// ReturnAfter makes StartRun return the run after this long even when its
	// turn has not started yet (the process is still starting); 0 waits for
	// the start. Errors that keep the turn from starting then come as the
	// run's result.
	ReturnAfter time.Duration
}

// Run is one query started with [Session.StartRun]: its record (package
// run) and its session.
type Run struct {
	*run.Run
	session *Session
}

// Session is the run's session.
func (r *Run) Session() *Session { return r.session }

// StartRun starts a query run in the background and returns once its turn has
// started or it waits for a usage limit's reset (or after
// RunOptions.ReturnAfter), or with the error that kept it
// from starting (a busy session is refused at once). Cancelling ctx before the turn starts cancels the run;
// afterwards only [run.Run.Cancel] does. A temporary session whose query cannot
// start is discarded (see oneshot.go).
func (s *Session) StartRun(ctx context.Context, prompt string, o RunOptions) (*Run, error) {
	rctx, cancel := context.WithCancel(context.Background())
	r := &Run{session: s}
	r.Run = run.New(run.Config{Prompt: prompt, Thinking: o.IncludeThinking, Listener: o.Listener, Cancel: cancel,
		DropAfter: s.m.cfg.DropAfter, Release: func() { s.releaseRun(o.CloseAfter) }, Log: s.log.Info})
	qo := QueryOptions{IncludeThinking: o.IncludeThinking, Effort: o.Effort, Images: o.Images, OnLimit: o.OnLimit, OnEvent: r.OnEvent}
	switch {
	case o.Ask != nil:
		qo.AskPermission = o.Ask
	case o.QueueQuestions:
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
