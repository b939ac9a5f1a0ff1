package dashboard

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// limitEnv makes the fake CLI's usage limit reset in an hour.
var limitEnv = map[string]string{fakecli.EnvResetsIn: "1h"}

// TestUsageLimitDashboard: the dashboard's list and session page show
// until when a session is limited, and its panel changes with it.
func TestUsageLimitDashboard(t *testing.T) {
	t.Parallel()
	path, env := fakecli.Command(t)
	maps.Copy(env, limitEnv)
	mgr := sessions.NewManager(sessions.Config{CLIPath: path, Env: env})
	t.Cleanup(mgr.Shutdown)
	d := New(mgr, Options{})
	ctx := context.Background()
	s, err := mgr.Create(ctx, sessions.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	before := d.panelKey(s)
	if _, err := s.Query(ctx, "LIMIT[600] hi", sessions.QueryOptions{OnLimit: sessions.OnFail}); err != nil {
		t.Fatal(err)
	}
	if d.panelKey(s) == before {
		t.Error("the session page's panel does not change with the limit")
	}
	row := d.row(ctx, s, false)
	until := s.Info().LimitedUntil.UTC().Format(time.RFC3339)
	if !strings.HasPrefix(row.Limited, "limited until "+until) {
		t.Fatalf("row.Limited = %q", row.Limited)
	}
	list, panel := htmlWriter{root: testRoot}, htmlWriter{root: testRoot}
	listPage{Rows: []sessionRow{row}}.write(&list)
	sessionPage{Row: row}.writePanel(&panel)
	for name, page := range map[string]string{"list": list.b.String(), "session page": panel.b.String()} {
		if !strings.Contains(page, `<div class="limited">limited until `+until) {
			t.Errorf("the %s does not show the limit:\n%s", name, page)
		}
	}
}
