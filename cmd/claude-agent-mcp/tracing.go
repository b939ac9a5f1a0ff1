package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/tracing"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// startTracing turns OpenTelemetry tracing on when the OTEL_* environment
// asks for it (package tracing), and with --trace-cli gives every CLI the
// variables of its own exporter. stop flushes the spans still queued, for
// at most five seconds. With tracing off nothing is set up; --trace-cli
// and --trace-prompts alone are refused, as they would do nothing. An
// OTEL_* setting the server cannot follow (gRPC, a bad endpoint) leaves
// tracing off with a warning, not a server that will not start: the same
// variables may be there for the CLIs' own telemetry.
func startTracing(c *config, mcfg *sessions.Config, logger *slog.Logger) (stop func(), err error) {
	on, shutdown, err := tracing.Setup(context.Background(), os.Getenv, tracing.Options{Version: versionString(), Prompts: c.tracePrompts})
	if !on {
		why := "set OTEL_EXPORTER_OTLP_ENDPOINT to the collector's OTLP/HTTP address (e.g. http://127.0.0.1:4318)"
		if err != nil {
			why = err.Error()
		}
		if c.traceCLI || c.tracePrompts {
			return nil, fmt.Errorf("--trace-cli and --trace-prompts need tracing on: %s; see docs/tracing.md", why)
		}
		if err != nil {
			logger.Warn("OpenTelemetry tracing stays off", "reason", err)
		}
		return func() {}, nil
	}
	if c.traceCLI {
		maps.Copy(mcfg.Env, tracing.CLIExporterEnv())
		mcfg.TraceCLI = true
	}
	logger.Info("OpenTelemetry tracing on: spans go to the OTLP/HTTP collector of OTEL_EXPORTER_OTLP_*", "cli_spans", c.traceCLI, "prompts", c.tracePrompts)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			logger.Warn("flushing the last spans to the OTLP collector", "err", err)
		}
	}, nil
}
