//go:build linux

package e2e_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
)

// TestE2ENamedSpare: a named session takes the warm spare its options
// started, like an unnamed one (the name once made it start a process of
// its own: 0.65–1.05 s against 4–9 ms), and the real CLI takes the name
// (control request rename_session): its transcript carries the
// custom-title line that --name writes.
func TestE2ENamedSpare(t *testing.T) {
	t.Parallel()
	e := startE2E(t, e2eOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.create(t, ctx, map[string]any{"cwd": e.cwd}) // wants spares for these options
	var spare int
	testkit.Until(t, time.Minute, "a warm spare ready", func() bool {
		for pid := range e.spares() {
			spare = pid
			return true
		}
		return false
	})
	start := time.Now()
	sid, _ := e.create(t, ctx, map[string]any{"cwd": e.cwd, "name": "reviewer"})
	t.Logf("a named create with a spare ready took %s", time.Since(start))
	info := e.info(t, ctx, sid)
	if pidOf(info) != spare {
		t.Fatalf("the named session runs pid %d, not the ready spare %d", pidOf(info), spare)
	}
	if info["name"] != "reviewer" {
		t.Errorf("the session lists name %v", info["name"])
	}
	_, out := e.query(t, ctx, sid, "hi")
	csid, _ := out["claudeSessionId"].(string)
	testkit.Until(t, 30*time.Second, "the name in the CLI's transcript", func() bool {
		b, err := os.ReadFile(transcriptPath(e, csid))
		return err == nil && strings.Contains(string(b), `"customTitle":"reviewer"`)
	})
}
