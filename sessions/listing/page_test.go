package listing

import (
	"slices"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
)

// TestParseState: every listed state is a filter of that state, "" none,
// and anything else an error naming the states.
func TestParseState(t *testing.T) {
	for _, st := range States {
		got, err := ParseState(string(st))
		if err != nil || !slices.Equal(got, []state.State{st}) {
			t.Errorf("ParseState(%q) = %v, %v", st, got, err)
		}
	}
	if got, err := ParseState(""); err != nil || got != nil {
		t.Errorf(`ParseState("") = %v, %v; want no filter`, got, err)
	}
	for _, bad := range []string{"closed", "interrupting", "Idle", "asleep"} {
		if _, err := ParseState(bad); err == nil || !strings.Contains(err.Error(), "dormant") {
			t.Errorf("ParseState(%q): %v, want an error naming the states", bad, err)
		}
	}
}
