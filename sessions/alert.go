package sessions

import (
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// Alert is what Config.OnAlert is told: a turn of Session ended (Result; its prompt went out at
// Started) or waits for a permission answer (Result nil, Tool the tool asking).
type Alert struct {
	Session *Session
	Result  *turn.Result
	Tool    string
	Started time.Time
}

// alert tells Config.OnAlert, if set, and of a turn's end OnTurnEnd's hook.
func (m *Manager) alert(a Alert) {
	if m.cfg.OnAlert != nil {
		m.cfg.OnAlert(a)
	}
	if f := m.onTurnEnd.Load(); f != nil && a.Result != nil {
		(*f)(a.Session)
	}
}

// OnTurnEnd sets what is told of every turn's end, follow-ups' too, once its
// history is recorded (mcptools/resources' updates); f must not block.
func (m *Manager) OnTurnEnd(f func(*Session)) { m.onTurnEnd.Store(&f) }
