//go:build unix

package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

// quitSignal is postgres's immediate shutdown.
var quitSignal = syscall.SIGQUIT

// asUser makes cmd run as an unprivileged user when the tests run as root
// (postgres refuses root): nobody. With a dir, it hands dir to that user.
func asUser(cmd *exec.Cmd, dir string) error {
	if cmd != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		setDeathSignal(cmd.SysProcAttr)
	}
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return fmt.Errorf("finding an unprivileged user to run postgres as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if dir != "" {
		return os.Chown(dir, uid, gid)
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return nil
}
