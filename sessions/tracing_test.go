package sessions

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/tracing"
)

// TestSettingsEnv: the env a turn's trace context is sent with keeps a
// settings object's own env; settings in a file (or given as a path) are
// not read, and then the trace context is not sent (it would replace
// their env).
func TestSettingsEnv(t *testing.T) {
	for _, c := range []struct {
		settings string
		file     string
		env      map[string]string
		ok       bool
	}{
		{"", "", nil, true},
		{`{"model":"x"}`, "", nil, true},
		{`{"env":{"A":"1","B":"2"}}`, "", map[string]string{"A": "1", "B": "2"}, true},
		{`"/etc/settings.json"`, "", nil, false},
		{`{"env":{"A":1}}`, "", nil, false},
		{"", "/etc/settings.json", nil, false},
	} {
		env, ok := settingsEnv(json.RawMessage(c.settings), c.file)
		if ok != c.ok || !maps.Equal(env, c.env) {
			t.Errorf("settingsEnv(%s, %q) = %v, %v; want %v, %v", c.settings, c.file, env, ok, c.env, c.ok)
		}
	}
}

// TestTracePermissionNames: a question of the model's (AskUserQuestion)
// is a question wait, any other tool a permission wait, each under the
// query's trace; without one (nil: no query runs) nothing is recorded.
func TestTracePermissionNames(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	defer tracing.Install(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), false)()
	ctx, turnSpan := tracing.Start(context.Background(), "claude.turn")
	for _, tool := range []string{"AskUserQuestion", "Bash"} {
		endPermission(tracePermission(ctx, tool), &claudeagent.PermissionResult{Behavior: "allow"})
	}
	var noQuery context.Context // Session.curTrace while no traced query runs
	endPermission(tracePermission(noQuery, "Bash"), &claudeagent.PermissionResult{Behavior: "deny"})
	turnSpan.End()
	var names []string
	for _, s := range rec.Ended() {
		if s.Name() != "claude.turn" && s.Parent().SpanID() != trace.SpanContextFromContext(ctx).SpanID() {
			t.Errorf("%s is not under the turn", s.Name())
		}
		names = append(names, s.Name())
	}
	if want := []string{"claude.question_wait", "claude.permission_wait", "claude.turn"}; !slices.Equal(names, want) {
		t.Errorf("spans %v, want %v", names, want)
	}
}
