package ceiling

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The jail (see the package comment): the namespaces are made when the
// wrapper is started (jailAttr), the rest by the wrapper inside them
// (enterJail, dropBounding, dropCapabilities) before it executes the
// program.

// jailFlags are the namespaces of a jailed process. The network is shared
// (the CLI needs the API); so is the host name.
const jailFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC

// jailAttr makes cmd start in new namespaces, its user and group mapped to
// the server's own (root to root, the whole range: files keep their
// owners; the capabilities a user namespace gives are dropped before the
// program runs).
func jailAttr(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	a := cmd.SysProcAttr
	a.Cloneflags |= jailFlags
	// The wrapper makes the jail's mounts and drops the bounding set: an
	// ordinary user's wrapper keeps these two of the namespace's
	// capabilities across its exec (root's keeps them all), and drops them
	// before the program runs.
	a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}
		a.GidMappingsEnableSetgroups = true
		return
	}
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	a.GidMappingsEnableSetgroups = false
}

// enterJail makes the process's mounts: its own from now on, a fresh /proc
// of its PID namespace, what lies beside its Alone directories hidden, and
// under NoPrograms every mount no-exec but the program's own files.
func (c *Ceiling) enterJail() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	var keep []clone
	defer func() {
		for _, k := range keep {
			unix.Close(k.fd)
		}
	}()
	if c.NoPrograms {
		// The files that stay executable are cloned before everything
		// becomes no-exec, and put back after.
		for _, p := range c.execFiles() {
			fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
			if err != nil {
				return fmt.Errorf("keeping %s executable: %w", p, err)
			}
			keep = append(keep, clone{fd, p})
		}
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOEXEC}
		if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &attr); err != nil {
			return fmt.Errorf("making every mount no-exec: %w", err)
		}
	}
	for _, dir := range c.Alone {
		if err := hideBeside(dir); err != nil {
			return err
		}
	}
	for _, k := range keep {
		if err := unix.MoveMount(k.fd, "", unix.AT_FDCWD, k.path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("keeping %s executable: %w", k.path, err)
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting a /proc of its own: %w", err)
	}
	return nil
}

// clone is a detached copy of the mount at path.
type clone struct {
	fd   int
	path string
}

// execFiles are the files that stay executable under NoPrograms: Exec
// and Map, their links resolved, the ones that exist.
func (c *Ceiling) execFiles() []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range append(append([]string{}, c.Exec...), c.Map...) {
		real, err := filepath.EvalSymlinks(p)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		out = append(out, real)
	}
	return out
}

// hideBeside hides the other entries of dir's parent: an empty file
// system takes the parent's place, with dir alone in it.
func hideBeside(dir string) error {
	src, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return fmt.Errorf("keeping %s: %w", dir, err)
	}
	defer unix.Close(src)
	parent := filepath.Dir(dir)
	if err := unix.Mount("tmpfs", parent, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0700,size=16k"); err != nil {
		return fmt.Errorf("hiding %s: %w", parent, err)
	}
	if err := unix.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("hiding %s: %w", parent, err)
	}
	if err := unix.MoveMount(src, "", unix.AT_FDCWD, dir, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("keeping %s: %w", dir, err)
	}
	return nil
}

// dropBounding empties the calling thread's bounding and ambient sets, so
// that the program it executes gets no capability, not even as root.
func dropBounding() error {
	for cp := 0; cp <= 63; cp++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(cp), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) {
				break // past the kernel's last capability
			}
			return fmt.Errorf("dropping capability %d from the bounding set: %w", cp, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clearing the ambient capabilities: %w", err)
	}
	return nil
}

// dropCapabilities empties the calling thread's effective, permitted and
// inheritable sets.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("dropping the capabilities: %w", err)
	}
	return nil
}

// JailAvailable reports whether a process can be jailed here (user, mount
// and PID namespaces, a /proc of its own, no-exec mounts): found out once,
// by starting this binary in a jail under NoPrograms.
func JailAvailable() error { return jailOnce() }

var jailOnce = sync.OnceValue(func() error {
	if !initCalled.Load() {
		return errors.New("the jail needs ceiling.Init at the start of this binary's main")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("%w: finding this binary: %v", ErrUnavailable, err)
	}
	c := &Ceiling{Jail: true, NoPrograms: true, Exec: append([]string{self}, Interpreters(self, "")...), Map: Libraries(self)}
	spec, err := jsonOf(c)
	if err != nil {
		return err
	}
	cmd := exec.Command(self, wrapperArg, spec, self, self, okArg)
	jailAttr(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := bytes.TrimSpace(stderr.Bytes())
		if len(msg) == 0 {
			msg = []byte(err.Error())
		}
		return fmt.Errorf("%w: the kernel refused a jail (user, mount and PID namespaces): %s", ErrUnavailable, msg)
	}
	return nil
})
