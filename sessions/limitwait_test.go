package sessions

import (
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

func TestValidateOnLimit(t *testing.T) {
	for _, v := range []string{"", "wait", "fail"} {
		if err := ValidateOnLimit(v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	if err := ValidateOnLimit("retry"); err == nil || !strings.Contains(err.Error(), "wait") {
		t.Errorf("retry: %v", err)
	}
}

// TestShownInfo: a limit shows until its reset, a warning until its own.
func TestShownInfo(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	sh := limitShown{Limit: &turn.Limit{Until: now.Add(time.Minute), Kind: "five_hour"}}
	if until, kind, _ := sh.Info(now); !until.Equal(now.Add(time.Minute)) || kind != "five_hour" {
		t.Errorf("before the reset: %s %q", until, kind)
	}
	if until, kind, _ := sh.Info(now.Add(time.Minute)); !until.IsZero() || kind != "" || sh.Active(now.Add(time.Minute)) != nil {
		t.Errorf("at the reset: %s %q", until, kind)
	}
}
