// Stopping a running turn of the CLI (halter): an interrupt the CLI must
// acknowledge within Ack — a CLI that does not (hung, or stopped) has its
// process stopped, SIGTERM then SIGKILL, and the turn ends with a note
// saying so —, and a turn that the CLI acknowledged stopping but does not
// end within Grace has its process killed.

package sessions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// halter is how a session stops its turns.
type halter struct {
	Ack   time.Duration // how long the CLI may take to acknowledge an interrupt
	Grace time.Duration // how long an acknowledged interrupt may take to end the turn
	Log   *slog.Logger
	// Interrupting is told, before the interrupt is sent, that t is being
	// interrupted (a query arriving now waits for its end).
	Interrupting func(t *turn.Turn)
}

// Interrupt asks the CLI to stop t's turn and reports whether it had to
// stop the process (it did not acknowledge within Ack); the session then
// resumes on its next query.
func (h halter) Interrupt(ctx context.Context, t *turn.Turn, p *claudeagent.Process) (forced bool) {
	t.MarkInterrupted()
	if h.Interrupting != nil {
		h.Interrupting(t)
	}
	ictx, cancel := context.WithTimeout(ctx, h.Ack)
	err := p.Interrupt(ictx)
	cancel()
	if err == nil || errors.Is(err, claudeagent.ErrClosed) || ctx.Err() != nil {
		return false // acknowledged, or the process is gone already (the pump ends the turn)
	}
	msg := fmt.Sprintf("claude did not acknowledge the interrupt within %s, so its process was stopped (SIGTERM, then SIGKILL); the session keeps its conversation and resumes on its next query", h.Ack)
	h.Log.Warn("claude did not acknowledge the interrupt; stopping its process", "after", h.Ack, "err", err)
	t.Force(msg)
	p.Stop(500 * time.Millisecond)
	return true
}

// Abort interrupts the turn and waits for it to end: a CLI that does not
// acknowledge the interrupt is stopped at once (Interrupt); one that
// acknowledges it but does not end the turn within Grace is killed.
func (h halter) Abort(t *turn.Turn, p *claudeagent.Process) {
	if h.Interrupt(context.Background(), t, p) {
		<-t.Done()
		return
	}
	tm := time.NewTimer(h.Grace)
	defer tm.Stop()
	select {
	case <-t.Done():
		return
	case <-tm.C:
	}
	h.Log.Warn("claude acknowledged the interrupt but did not end the turn; killing it", "grace", h.Grace)
	p.Kill()
	<-t.Done()
}
