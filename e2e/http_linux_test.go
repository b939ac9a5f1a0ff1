//go:build linux

package e2e_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestE2EHTTPShutdown stops an --http server with SIGTERM while one of its
// users' turns runs: the call returns, the server exits 0, and no process
// it started (the claude CLIs, the watchdog) is left, counted through /proc.
func TestE2EHTTPShutdown(t *testing.T) {
	t.Parallel()
	e := startHTTPE2E(t, httpE2EOptions{users: []string{"alice"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alice := e.connect(t, "alice", "")
	var ids []string
	for i := 0; i < 2; i++ {
		res, out := httpCall(t, ctx, alice, "claude_session_create", map[string]any{"cwd": e.cwd})
		if res.IsError {
			t.Fatalf("create: %s", text(res))
		}
		ids = append(ids, out["sessionId"].(string))
	}
	returned := make(chan error, 1)
	go func() {
		_, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "claude_chat_query", Arguments: map[string]any{"sessionId": ids[0], "prompt": "SLOW"}})
		returned <- err
	}()
	if _, err := e.api.WaitMessageRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	pid := e.cmd.Process.Pid
	kids := descendants(t, pid)
	if len(kids) < 3 { // two CLIs and the watchdog, at least
		t.Fatalf("expected ≥3 processes under the server, found %v", kids)
	}
	start := time.Now()
	if err := e.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if left := waitGone(append(kids, pid), 10*time.Second); len(left) > 0 {
		t.Fatalf("processes alive 10 s after SIGTERM: %v (of server %d and %v)", left, pid, kids)
	}
	select {
	case <-e.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the server process was not reaped 10 s after it was gone")
	}
	if code := e.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the server exited %d after SIGTERM, want 0", code)
	}
	select {
	case err := <-returned:
		t.Logf("the running call returned: %v", err)
	case <-time.After(10 * time.Second):
		t.Error("the running call did not return 10 s after the server stopped")
	}
	t.Logf("server and %d children gone in %s", len(kids), time.Since(start).Round(time.Millisecond))
	e.stop(t)
}
