package main

import (
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/procwait"
)

// watchdogArg, as the first argument, runs the binary as the watchdog.
const watchdogArg = "__watchdog"

// ServerMarkerEnv marks every process this server starts (the CLIs and,
// through their environment, the tools they run).
const ServerMarkerEnv = "CLAUDE_SUBAGENT_SERVER"

// startWatchdog starts a small helper (this binary again) that kills every
// process carrying marker once this server is gone, even after a SIGKILL:
// the CLIs die with the server (Pdeathsig), but the Bash commands they run
// live in sessions of their own. stop ends it after a normal shutdown.
// Only Linux can find processes by their environment; elsewhere it is a
// no-op.
func startWatchdog(marker string, logger *slog.Logger) (stop func()) {
	if runtime.GOOS != "linux" {
		return func() {}
	}
	exe, err := os.Executable()
	if err != nil {
		logger.Warn("no watchdog: cannot find this executable", "err", err)
		return func() {}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		logger.Warn("no watchdog", "err", err)
		return func() {}
	}
	cmd := exec.Command(exe, watchdogArg, marker)
	cmd.Stdin = pr
	cmd.Env = os.Environ()
	setWatchdogAttr(cmd)
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		logger.Warn("no watchdog", "err", err)
		return func() {}
	}
	pr.Close()
	done := make(chan struct{})
	go func() {
		procwait.AwaitExit(cmd.Process.Pid) // no thread held for the server's life
		_ = cmd.Wait()
		close(done)
	}()
	return func() {
		pw.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
		}
	}
}

// runWatchdog waits for its stdin to end (the server is gone) and then
// kills what the server left behind.
func runWatchdog(marker string, stdin io.Reader) int {
	_, _ = io.Copy(io.Discard, stdin)
	claudeagent.KillMarked(ServerMarkerEnv + "=" + marker)
	return 0
}
