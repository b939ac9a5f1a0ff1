package tracing

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The span exporter: OTLP over HTTP, protobuf (otlpwire.go). Not the
// SDK's otlptracehttp: its request type's package links
// google.golang.org/grpc and grpc-gateway, 7.8 MB of the release binary
// and 5 MiB resident for a server that speaks no gRPC (BENCHMARKS.md,
// "What tracing costs").

// httpClient posts spans to an OTLP/HTTP collector: the SDK's batch
// processor hands it each batch (sdktrace.SpanExporter).
type httpClient struct {
	url     string
	header  http.Header
	timeout time.Duration
	client  *http.Client
}

// newHTTPClient reads the standard variables: the endpoint
// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else
// OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces; default
// http://localhost:4318), headers (OTEL_EXPORTER_OTLP_[TRACES_]HEADERS,
// key=value pairs, URL-encoded) and the timeout
// (OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT, milliseconds; default 10 s).
func newHTTPClient(getenv func(string) string) (*httpClient, error) {
	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		base := getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		if base == "" {
			base = "http://localhost:4318"
		}
		endpoint = strings.TrimRight(base, "/") + "/v1/traces"
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the OTLP endpoint %q is not an http(s) URL: set OTEL_EXPORTER_OTLP_ENDPOINT to the collector's address, e.g. http://127.0.0.1:4318", endpoint)
	}
	c := &httpClient{url: u.String(), header: http.Header{}, timeout: 10 * time.Second, client: &http.Client{}}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		if err := parseHeaders(getenv(name), c.header); err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"} {
		if v := getenv(name); v != "" {
			ms, err := strconv.Atoi(v)
			if err != nil || ms <= 0 {
				return nil, fmt.Errorf("%s=%s: give a number of milliseconds", name, v)
			}
			c.timeout = time.Duration(ms) * time.Millisecond
		}
	}
	return c, nil
}

// parseHeaders adds the key=value pairs of v (comma-separated, each part
// URL-encoded, as the specification says) to h.
func parseHeaders(v string, h http.Header) error {
	for _, pair := range strings.Split(v, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, val, ok := strings.Cut(pair, "=")
		key, err1 := url.PathUnescape(strings.TrimSpace(k))
		value, err2 := url.PathUnescape(strings.TrimSpace(val))
		if !ok || key == "" || err1 != nil || err2 != nil {
			return fmt.Errorf("%q is not key=value", pair)
		}
		h.Set(key, value)
	}
	return nil
}

// Shutdown closes the idle connections.
func (c *httpClient) Shutdown(context.Context) error {
	c.client.CloseIdleConnections()
	return nil
}

// ExportSpans posts one batch of spans.
func (c *httpClient) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	body := encodeTraces(spans)
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("exporting spans to %s: %w", c.url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("exporting spans to %s: %s %s", c.url, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}
