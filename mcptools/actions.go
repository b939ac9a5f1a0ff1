package mcptools

import "fmt"

// What each tool lets a caller do, for the policy (deny by default): a
// tools/call of a tool without a class is refused before it runs, and
// TestEveryToolClassified fails when a tool has none. Session options and
// changes are classified by the sessions gate (sessions/gate.go); this
// table says which calls start or steer work at all.
const (
	actionRead  = "read"  // reads the caller's sessions and results
	actionSteer = "steer" // changes or stops the caller's sessions
	actionRun   = "run"   // starts a claude process or a turn
)

var toolActions = map[string]string{
	"claude_session_create":  actionRun,
	"claude_session_close":   actionSteer,
	"claude_chat_query":      actionRun,
	"claude_chat_interrupt":  actionSteer,
	"claude_chat_steer":      actionRun, // the message may be answered in a turn of its own
	"claude_chat_model":      actionSteer,
	"claude_chat_mode":       actionSteer,
	"claude_direct_query":    actionRun,
	"claude_session_list":    actionRead,
	"claude_chat_wait":       actionRead,
	"claude_session_history": actionRead,
	"claude_session_rewind":  actionRun, // may resume a dormant session's process; changes its files
	"claude_session_land":    actionRun, // the session may be asked for a commit message, a turn
}

// toolAction is the class of a registered tool; ok is false for one that
// has none (which is refused).
func (h *handlers) toolAction(name string) (string, bool) {
	actions := h.actions
	if actions == nil {
		actions = toolActions
	}
	if a, ok := actions[name]; ok {
		return a, true
	}
	if h.dynamicAction != nil {
		return h.dynamicAction(name)
	}
	return "", false
}

// unclassifiedTool is the error for a call of a registered tool that has
// no class.
func unclassifiedTool(name string) error {
	return fmt.Errorf("tool %s is not classified by this server's policy, so it is refused", name)
}
