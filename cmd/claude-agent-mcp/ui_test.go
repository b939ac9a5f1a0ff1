package main

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// TestListenUIPortTaken: a --ui port already taken (a second server on the
// same fixed port) moves the dashboard to another free port of that host,
// said once in the log, instead of ending the server.
func TestListenUIPortTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	ln, err := listenUI(taken.Addr().String(), logger)
	if err != nil {
		t.Fatalf("listenUI on a taken port: %v", err)
	}
	defer ln.Close()
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	_, takenPort, _ := net.SplitHostPort(taken.Addr().String())
	if host != "127.0.0.1" || port == takenPort {
		t.Errorf("listening on %s, want another port of 127.0.0.1 than the taken %s", ln.Addr(), taken.Addr())
	}
	if n := strings.Count(log.String(), "port is taken"); n != 1 || !strings.Contains(log.String(), ln.Addr().String()) {
		t.Errorf("the log says %d times that the port is taken, want once with the new address %s:\n%s", n, ln.Addr(), log.String())
	}

	// A free port is listened on as given, and nothing is logged.
	log.Reset()
	free := ln.Addr().String()
	ln.Close()
	again, err := listenUI(free, logger)
	if err != nil {
		t.Fatalf("listenUI on the free %s: %v", free, err)
	}
	defer again.Close()
	if again.Addr().String() != free || log.Len() != 0 {
		t.Errorf("listening on %s (want %s), log %q", again.Addr(), free, log.String())
	}
}

// TestStartUIUnlistenable: an address that cannot be listened on for any
// other reason leaves the dashboard off, logged, and the server serving.
func TestStartUIUnlistenable(t *testing.T) {
	var log bytes.Buffer
	c := &config{ui: "127.0.0.1:99999"}
	dash, stop, err := startUI(c, nil, nil, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil || dash != nil || stop == nil {
		t.Fatalf("startUI = %v, %v: want no dashboard and no error", dash, err)
	}
	stop()
	if !strings.Contains(log.String(), "the dashboard is off") {
		t.Errorf("the log does not say the dashboard is off:\n%s", log.String())
	}
}
