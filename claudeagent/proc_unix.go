//go:build unix

package claudeagent

import (
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// setProcAttr starts the CLI in its own process group, so that signals
// reach the tools and MCP servers it spawns too.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
}

// terminate asks the whole process group to stop (SIGTERM).
func terminate(p *os.Process) error { return signalGroup(p, syscall.SIGTERM) }

// kill ends the whole process group (SIGKILL).
func kill(p *os.Process) error { return signalGroup(p, syscall.SIGKILL) }

func signalGroup(p *os.Process, sig syscall.Signal) error {
	if err := syscall.Kill(-p.Pid, sig); err != nil {
		// The group may be gone while the leader is not yet reaped.
		if err2 := p.Signal(sig); err2 != nil {
			return err2
		}
	}
	return nil
}

// exitSignal names the signal that ended the process, such as SIGKILL.
func exitSignal(xe *exec.ExitError) string {
	if ws, ok := xe.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		if name := unix.SignalName(ws.Signal()); name != "" {
			return name
		}
		return ws.Signal().String()
	}
	return ""
}
