package ceiling

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The access rights this package hands out; each is masked with what the
// kernel's ABI knows.
const (
	fsExecute  uint64 = unix.LANDLOCK_ACCESS_FS_EXECUTE
	fsReadFile uint64 = unix.LANDLOCK_ACCESS_FS_READ_FILE
	fsReadDir  uint64 = unix.LANDLOCK_ACCESS_FS_READ_DIR
	// fsFileWrite are the rights of writing a file that exists.
	fsFileWrite uint64 = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	// fsFileRights are the rights a rule on a file (not a directory) may
	// carry.
	fsFileRights = fsExecute | fsReadFile | fsFileWrite | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// abiRights are the file system rights of each Landlock ABI version
// (index), as far as this package uses them; scopes (ABI 6) aside.
var abiRights = []uint64{
	0,
	(1 << 13) - 1, // 1: execute … make_sym
	(1 << 14) - 1, // 2: refer
	(1 << 15) - 1, // 3: truncate
	(1 << 15) - 1, // 4: network only
	(1 << 16) - 1, // 5: ioctl_dev
}

// rulesetAttr is struct landlock_ruleset_attr as of ABI 6.
type rulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

// pathBeneathAttr is struct landlock_path_beneath_attr (packed).
type pathBeneathAttr struct {
	allowed  uint64
	parentFd int32
}

var abiOnce = sync.OnceValues(func() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, fmt.Errorf("%w: Landlock is not enabled in this kernel (%v)", ErrUnavailable, errno)
	}
	return int(v), nil
})

// Available returns the kernel's Landlock ABI version, or an error
// wrapping ErrUnavailable.
func Available() (int, error) { return abiOnce() }

// handled returns the rights the ruleset handles (refuses unless a rule
// grants them) on this kernel, and whether signals and abstract sockets
// can be scoped.
func (c *Ceiling) handled(abi int) (fs uint64, scoped bool) {
	all := abiRights[min(max(abi, 0), len(abiRights)-1)]
	if c.NoPrograms {
		fs |= fsExecute
	}
	if c.Files {
		fs |= all &^ fsExecute
	}
	return fs & all, abi >= 6
}

// start starts cmd through the wrapper (see [Init]): the process first
// runs this binary, which restricts itself and then executes cmd's program
// in its place (same pid, process group and parent-death signal).
func (c *Ceiling) startConfined(cmd *exec.Cmd) error {
	if c.landlock() {
		if _, err := Available(); err != nil {
			return err
		}
	}
	if c.Jail {
		if err := JailAvailable(); err != nil {
			return err
		}
		jailAttr(cmd)
	}
	if !initCalled.Load() {
		return errors.New("starting a process under the kernel's ceiling needs ceiling.Init at the start of this binary's main")
	}
	self, err := wrapper()
	if err != nil {
		return fmt.Errorf("finding this binary to apply the kernel's ceiling: %w", err)
	}
	spec, err := jsonOf(c)
	if err != nil {
		return err
	}
	cmd.Args = append([]string{self, wrapperArg, spec, cmd.Path}, cmd.Args...)
	cmd.Path = self
	return cmd.Start()
}

// wrapper is the binary run as the wrapper: this one (BenchmarkJailStart
// times another, the server's).
var wrapper = os.Executable

// landlock reports whether c needs a Landlock ruleset on files.
func (c *Ceiling) landlock() bool { return c.NoPrograms || c.Files }

// jsonOf is c as the wrapper's argument.
func jsonOf(c *Ceiling) (string, error) {
	spec, err := json.Marshal(c)
	return string(spec), err
}

// wrap is the wrapper's work: restrict this thread by the ceiling in
// spec, then execute path with argv in its place. It returns only on
// failure.
func wrap(spec, path string, argv []string) error {
	var c Ceiling
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		return fmt.Errorf("reading the ceiling: %w", err)
	}
	abi, err := Available()
	if err != nil && c.landlock() {
		return err
	}
	if c.Jail {
		// Mounts are the process's: any thread may make them.
		if err := c.enterJail(); err != nil {
			return fmt.Errorf("entering the jail: %w", err)
		}
	}
	// The restriction and the exec happen on one thread: the new
	// program has that thread's credentials, and with them the domain.
	runtime.LockOSThread()
	if c.Jail {
		if err := dropBounding(); err != nil {
			return err
		}
	}
	if c.landlock() || (c.Jail && abi >= 6) {
		if err := c.restrictThread(abi); err != nil {
			return err
		}
	}
	if c.Jail {
		if err := dropCapabilities(); err != nil {
			return err
		}
	}
	return fmt.Errorf("executing %s under the ceiling: %w", path, syscall.Exec(path, argv, os.Environ()))
}

// restrictThread restricts the calling thread (locked by the caller): the
// file rights c handles, and from ABI 6 signals and abstract sockets.
func (c *Ceiling) restrictThread(abi int) error {
	fd, err := c.ruleset(abi)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// Per thread, as landlock_restrict_self is: not unix.Prctl's
	// all-threads variant.
	if _, _, errno := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); errno != 0 {
		return fmt.Errorf("setting no_new_privs: %w", errno)
	}
	if _, _, errno := unix.RawSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); errno != 0 {
		return fmt.Errorf("restricting the thread: %w", errno)
	}
	return nil
}

// ruleset builds c's Landlock ruleset and returns its descriptor.
func (c *Ceiling) ruleset(abi int) (int, error) {
	fs, scoped := c.handled(abi)
	attr := rulesetAttr{handledFS: fs}
	if scoped {
		attr.scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return -1, fmt.Errorf("creating the Landlock ruleset: %w", errno)
	}
	fd := int(r)
	add := func(paths []string, rights uint64) error {
		for _, p := range paths {
			if err := addRule(fd, p, rights&fs); err != nil {
				return err
			}
		}
		return nil
	}
	all := fs
	read := fsReadFile | fsReadDir
	exec := uint64(0)
	if !c.NoPrograms {
		exec = fsExecute
	}
	err := errors.Join(
		add(c.Exec, fsExecute|read),
		add(c.Read, read|exec),
		// Never execute what can be written: a program the session
		// wrote (or found in a repository) is no program of the CLI's.
		add(c.Write, all&^fsExecute),
	)
	if !c.Files && fs != 0 {
		// Files are not restricted: everything but execution, everywhere.
		err = errors.Join(err, add([]string{"/"}, all&^fsExecute))
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// addRule grants rights beneath path (masked to a file's rights when path
// is not a directory); a missing path is skipped.
func addRule(fd int, path string, rights uint64) error {
	if rights == 0 {
		return nil
	}
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening %s for the Landlock ruleset: %w", path, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return fmt.Errorf("reading %s for the Landlock ruleset: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		rights &= fsFileRights
	}
	attr := pathBeneathAttr{allowed: rights, parentFd: int32(pfd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(fd), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("adding %s to the Landlock ruleset: %w", path, errno)
	}
	return nil
}
