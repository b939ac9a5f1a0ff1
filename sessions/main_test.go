package sessions

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/pgtest"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
)

// TestMain lets the test binary double as the fake claude CLI (see
// fakecli.Command), and records every move of a session's state: a move
// the transition table does not allow fails the run, whichever test made
// it (see State), and TestStateTransitions reads the moves of its sessions.
func TestMain(m *testing.M) {
	if os.Getenv(fakecli.EnvVar) == "1" {
		fakecli.Main()
	}
	onMove = moves.record
	code := m.Run()
	pgtest.Stop()
	if bad := moves.invalid(); len(bad) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: session state moves the transition table does not allow:\n%v\n", bad)
		code = 1
	}
	os.Exit(code)
}

// moveLog is every move of every session, by session.
type moveLog struct {
	mu  sync.Mutex
	by  map[*Session][]state.Move
	bad []string
}

var moves moveLog

func (l *moveLog) record(s *Session, from, to state.State) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[*Session][]state.Move{}
	}
	l.by[s] = append(l.by[s], state.Move{From: from, To: to})
	if !state.Allowed(from, to) {
		l.bad = append(l.bad, fmt.Sprintf("session %s: %s→%s", s.ID, from, to))
	}
}

// of returns the moves of s so far.
func (l *moveLog) of(s *Session) []state.Move {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.by[s])
}

func (l *moveLog) invalid() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.bad)
}
