//go:build windows

package claudeagent

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcAttr gives the CLI its own process group.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
	setDeathSignal(cmd.SysProcAttr) // a no-op, as on every system but Linux
}

// terminate has no graceful signal to send on Windows; it kills.
func terminate(p *os.Process) error { return p.Kill() }

// kill ends the process.
func kill(p *os.Process) error { return p.Kill() }

func exitSignal(*exec.ExitError) string { return "" }
