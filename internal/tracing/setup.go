package tracing

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Setup from the OTEL_* environment: whether traces are wanted (Wanted),
// and the SDK's provider with its OTLP exporter (Setup).

// Options are the operator's choices beside the environment.
type Options struct {
	Version string // the server's, for service.version
	Prompts bool   // --trace-prompts
}

// Wanted reports whether the environment asks for traces: tracing is off
// unless OTEL_TRACES_EXPORTER is otlp, or it is unset and an OTLP
// endpoint is (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); OTEL_SDK_DISABLED=true turns it
// off. An exporter or protocol this server does not have is an error that
// says what to set.
func Wanted(getenv func(string) string) (bool, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false, nil
	}
	on := false
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false, nil
	case "otlp":
		on = true
	case "":
		on = getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%s is not supported: set otlp (with OTEL_EXPORTER_OTLP_ENDPOINT) or none", exp)
	}
	if !on {
		return false, nil
	}
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		return false, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s is not supported: this server exports traces over OTLP/HTTP only; set http/protobuf and point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's HTTP port (4318), see docs/tracing.md", proto)
	}
	return true, nil
}

// Setup turns tracing on when the environment asks for it (Wanted): an
// OTLP/HTTP exporter (otlphttp.go, otlpwire.go) configured by the standard
// OTEL_EXPORTER_OTLP_* variables (endpoint, headers, timeout), a batching provider (OTEL_BSP_*, OTEL_TRACES_SAMPLER), the
// resource service.name claude-agent-mcp unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES say otherwise. shutdown flushes the spans
// still queued; with tracing off it does nothing and nothing was set up.
func Setup(ctx context.Context, getenv func(string) string, o Options) (on bool, shutdown func(context.Context) error, err error) {
	shutdown = func(context.Context) error { return nil }
	if on, err = Wanted(getenv); !on || err != nil {
		return false, shutdown, err
	}
	exp, err := newHTTPClient(getenv)
	if err != nil {
		return false, shutdown, err
	}
	version := o.Version
	if version == "" {
		version = "devel"
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "claude-agent-mcp"), attribute.String("service.version", version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return false, shutdown, fmt.Errorf("reading OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	restore := Install(tp, o.Prompts)
	return true, func(ctx context.Context) error {
		defer restore()
		return tp.Shutdown(ctx)
	}, nil
}

// CLIExporterEnv is what --trace-cli adds to every CLI's environment: its
// own telemetry on, its traces (a beta of the CLI's) exported over OTLP to
// the collector the server's OTEL_EXPORTER_OTLP_* variables name (a CLI
// inherits those: claudeagent lets OTEL_* through), its metrics and logs
// left off, and service.name claude-code so its spans are told from the
// server's.
func CLIExporterEnv() map[string]string {
	return map[string]string{
		"CLAUDE_CODE_ENABLE_TELEMETRY":        "1",
		"CLAUDE_CODE_ENHANCED_TELEMETRY_BETA": "1",
		"OTEL_TRACES_EXPORTER":                "otlp",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL":  "http/protobuf",
		"OTEL_METRICS_EXPORTER":               "none",
		"OTEL_LOGS_EXPORTER":                  "none",
		"OTEL_SERVICE_NAME":                   "claude-code",
	}
}
