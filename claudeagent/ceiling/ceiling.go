// Package ceiling is what the kernel lets a claude CLI process, and every
// program it starts, do and see. A session is a hostile tenant: the
// server's policy decides what it may do, and a Ceiling makes the kernel
// refuse the rest, so that a way of running a program that the policy's
// classification does not know (a helper in a nested document, an agent or
// a settings file the CLI loads by itself) is refused all the same.
//
// Two layers. The jail ([Ceiling.Jail], Linux): the process runs in user,
// mount, PID and IPC namespaces of its own, as bubblewrap and Claude
// Code's own Linux sandbox run theirs: a fresh /proc that shows only its
// own processes (not the server's nor another session's command line or
// environment), no capabilities in any set whatever user the server runs
// as, the other processes' private directories hidden ([Ceiling.Alone]),
// and under NoPrograms every mount no-exec but the files the CLI itself
// maps ([Ceiling.Exec], [Ceiling.Map]), so that the dynamic loader cannot
// run another program (Landlock checks execve, not the loader's mmap). The
// Landlock ruleset: which files it may execute, read and write, and
// (ABI 6) no signal or abstract socket beyond its domain.
//
// [Ceiling.Start] starts this same binary as a wrapper (see [Init]), which
// enters the jail, restricts itself and then executes the program in its
// place, so that the program and everything it starts carry the
// restriction and the server never does. (Restricting a thread of the
// server and forking from it would do without the extra exec, but the
// parent-death signal follows the thread that forked, and that thread
// would have to live as long as the child.) In the jail the program is its
// PID namespace's init: when it ends, everything it started ends with it.
// Elsewhere, and on kernels without Landlock or namespaces, [Available]
// and [JailAvailable] say so and a Ceiling that needs them refuses to
// start.
//
// It knows paths, access rights and namespaces, nothing of sessions,
// policy or MCP.
package ceiling

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
)

// Ceiling is what the kernel lets a process and its descendants do. The
// zero value restricts nothing. Paths may be files or directories (a
// directory covers everything beneath it); a path that does not exist is
// left out.
type Ceiling struct {
	// NoPrograms lets the process execute only the files under Exec: no
	// shell, no other program.
	NoPrograms bool
	// Exec are the files (or directories) that may be executed under
	// NoPrograms: the CLI's own binary and what it ships, the dynamic
	// loader.
	Exec []string
	// Files, when set, limits file access to Read and Write (and Exec);
	// otherwise files are not restricted.
	Files bool
	// Read may be read (and, when Files is set, nothing else beyond Write).
	Read []string
	// Write may be read, written, created and removed.
	Write []string

	// Jail runs the process in namespaces of its own (see the package
	// comment).
	Jail bool
	// Map are files the process maps executable but never executes (the
	// shared libraries of the files under Exec): in the jail under
	// NoPrograms they stay on executable mounts.
	Map []string
	// Alone are directories the process sees alone in their parents, in
	// the jail: what lies beside each (other processes' private
	// directories, other projects' transcripts) is hidden.
	Alone []string
}

// Restricts reports whether c restricts anything.
func (c *Ceiling) Restricts() bool { return c != nil && (c.NoPrograms || c.Files || c.Jail) }

// wrapperArg is the first argument that makes a binary the wrapper.
const wrapperArg = "__ceiling"

// Init makes this binary the wrapper when it was started as one: call it
// first in main (and in TestMain of tests that start processes under a
// ceiling). It returns at once otherwise; as the wrapper it never returns:
// the program runs in its place, or the wrapper exits 126 saying why.
func Init() {
	initCalled.Store(true)
	if len(os.Args) == 2 && os.Args[1] == okArg {
		os.Exit(0)
	}
	if len(os.Args) < 5 || os.Args[1] != wrapperArg {
		return
	}
	err := wrap(os.Args[2], os.Args[3], os.Args[4:])
	fmt.Fprintf(os.Stderr, "claude-agent-mcp: the kernel's ceiling: %v\n", err)
	os.Exit(126)
}

// initCalled records that this binary calls Init: without it the wrapper
// would run the binary's main again, which would start the wrapper again.
var initCalled atomic.Bool

// ErrUnavailable is returned when a restrictive Ceiling cannot be enforced
// here (no Landlock, or another system).
var ErrUnavailable = errors.New("the kernel cannot enforce the ceiling")

// Start starts cmd under c (see the package comment). A Ceiling that
// restricts nothing starts cmd as it is.
func (c *Ceiling) Start(cmd *exec.Cmd) error {
	if !c.Restricts() {
		return cmd.Start()
	}
	return c.startConfined(cmd)
}

// String describes c for logs: what it restricts.
func (c *Ceiling) String() string {
	if !c.Restricts() {
		return "none"
	}
	var parts []string
	if c.Jail {
		parts = append(parts, "in a jail of its own")
	}
	if c.NoPrograms {
		parts = append(parts, "executes only "+strings.Join(c.Exec, ","))
	}
	if c.Files {
		parts = append(parts, "reads "+strings.Join(c.Read, ","), "writes "+strings.Join(c.Write, ","))
	}
	return strings.Join(parts, "; ")
}

// With returns c with more paths (a copy: c is not changed).
func (c Ceiling) With(exec, read, write []string) Ceiling {
	c.Exec = append(slices.Clip(c.Exec), exec...)
	c.Read = append(slices.Clip(c.Read), read...)
	c.Write = append(slices.Clip(c.Write), write...)
	return c
}

// okArg, as the first argument, makes a binary that calls Init exit 0 at
// once: what the wrapper runs to find out whether the jail can be entered
// (JailAvailable).
const okArg = "__ceiling_ok"
