package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/tracing"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// TestStartTracing: without an OTLP endpoint tracing stays off and
// --trace-cli or --trace-prompts alone are refused, saying what to set;
// with one, --trace-cli gives the CLIs their exporter's variables; a
// protocol the server does not speak leaves tracing off with a warning
// (the variables may be the CLIs'), and refuses --trace-cli, saying why.
func TestStartTracing(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		t.Setenv(k, "")
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mcfg := &sessions.Config{Env: map[string]string{}}
	stop, err := startTracing(&config{}, mcfg, log)
	if err != nil || tracing.On() || len(mcfg.Env) != 0 {
		t.Fatalf("no endpoint: %v, on %v, env %v", err, tracing.On(), mcfg.Env)
	}
	stop()
	for _, c := range []*config{{traceCLI: true}, {tracePrompts: true}} {
		if _, err := startTracing(c, mcfg, log); err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_ENDPOINT") {
			t.Errorf("%+v without tracing: %v", *c, err)
		}
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	var warned strings.Builder
	if _, err := startTracing(&config{}, mcfg, slog.New(slog.NewTextHandler(&warned, nil))); err != nil || tracing.On() ||
		!strings.Contains(warned.String(), "http/protobuf") {
		t.Errorf("grpc: %v, on %v, logged %q", err, tracing.On(), warned.String())
	}
	if _, err := startTracing(&config{traceCLI: true}, mcfg, log); err == nil || !strings.Contains(err.Error(), "http/protobuf") {
		t.Errorf("grpc with --trace-cli: %v", err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	stop, err = startTracing(&config{traceCLI: true}, mcfg, log)
	if err != nil || !tracing.On() || mcfg.Env["CLAUDE_CODE_ENABLE_TELEMETRY"] != "1" || mcfg.Env["OTEL_TRACES_EXPORTER"] != "otlp" {
		t.Fatalf("--trace-cli: %v, on %v, env %v", err, tracing.On(), mcfg.Env)
	}
	stop()
	if tracing.On() {
		t.Error("tracing still on after stop")
	}
}
