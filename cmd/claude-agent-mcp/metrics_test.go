package main

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// TestMetricsPortTaken: a --metrics address that cannot be listened on is
// an error at start naming the flag (the operator asked for the endpoint:
// it is never silently missing nor moved), and nothing is hooked.
func TestMetricsPortTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var log bytes.Buffer
	var mcfg sessions.Config
	om, err := newOperatorMetrics(&config{metrics: taken.Addr().String()}, &mcfg, slog.New(slog.NewTextHandler(&log, nil)))
	if err == nil || om != nil || !strings.Contains(err.Error(), "listening on --metrics "+taken.Addr().String()) {
		t.Fatalf("newOperatorMetrics on a taken port = %v, %v; want an error naming --metrics and the address", om, err)
	}
	if mcfg.OnAlert != nil || mcfg.OnTakeover != nil {
		t.Error("hooks were set although the metrics failed")
	}

	// Without --metrics nor --metrics-tokens-file there are no metrics.
	if om, err := newOperatorMetrics(&config{}, &mcfg, slog.New(slog.DiscardHandler)); om != nil || err != nil {
		t.Errorf("without the flags: %v, %v; want nothing", om, err)
	}
	om.serve(nil)() // a nil one serves nothing
}
