package ceiling

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// jailChild does what the jail tests ask of the child (see child):
// "procs" prints the process ids /proc shows; "caps" prints the
// capability lines of /proc/self/status; "ls DIR" prints DIR's entries.
func jailChild(verb, arg string) (code int, ok bool) {
	switch verb {
	case "procs":
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return 4, true
		}
		for _, e := range entries {
			if _, err := strconv.Atoi(e.Name()); err == nil {
				fmt.Println(e.Name())
			}
		}
	case "caps":
		status, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return 4, true
		}
		for line := range strings.Lines(string(status)) {
			if strings.HasPrefix(line, "Cap") {
				fmt.Print(line)
			}
		}
	case "see":
		// Whether arg can be read: gone from view counts as refused.
		if _, err := os.ReadFile(arg); err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
				return 3, true
			}
			return 4, true
		}
	case "ls":
		entries, err := os.ReadDir(arg)
		if err != nil {
			return 4, true
		}
		for _, e := range entries {
			fmt.Println(e.Name())
		}
	default:
		return 0, false
	}
	return 0, true
}

// requireJail fails under CI=true where the jail cannot be entered (the
// machines this project is tested on can), and skips elsewhere.
func requireJail(t *testing.T) {
	t.Helper()
	if err := JailAvailable(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the jail is needed for this test: %v", err)
		}
		t.Skip(err)
	}
}

// output runs the test binary under c doing what and returns what it
// printed.
func output(t *testing.T, c *Ceiling, what string) string {
	t.Helper()
	self, _ := os.Executable()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), childEnv+"="+what)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := startOutput(c, cmd)
	if err != nil {
		t.Fatalf("%s under %s: %v %s", what, c, err, stderr.String())
	}
	return out
}

func startOutput(c *Ceiling, cmd *exec.Cmd) (string, error) {
	var out strings.Builder
	cmd.Stdout = &out
	if err := c.Start(cmd); err != nil {
		return "", err
	}
	err := cmd.Wait()
	return out.String(), err
}

// selfCeiling is the jail with what the test binary needs to run under
// NoPrograms.
func selfCeiling(noPrograms bool) *Ceiling {
	self, _ := os.Executable()
	return &Ceiling{Jail: true, NoPrograms: noPrograms, Exec: append([]string{self}, Interpreters(self, "")...), Map: Libraries(self)}
}

// TestJailProcesses: a jailed process sees its own processes alone in
// /proc: not the test's (the server's), whose command line and
// environment stay out of reach.
func TestJailProcesses(t *testing.T) {
	requireJail(t)
	if got := output(t, selfCeiling(false), "procs"); strings.Fields(got)[0] != "1" || len(strings.Fields(got)) != 1 {
		t.Errorf("the jail's /proc shows %q, want its own process (1) alone", got)
	}
	self := strconv.Itoa(os.Getpid())
	for _, f := range []string{"cmdline", "environ", "status"} {
		if try(t, selfCeiling(false), "see /proc/"+self+"/"+f) {
			t.Errorf("the jailed process read the server's /proc/%s/%s", self, f)
		}
	}
	// The control: outside the jail it is there.
	if !try(t, &Ceiling{}, "see /proc/"+self+"/cmdline") {
		t.Error("outside the jail the server's command line is unreadable: the check above proves nothing")
	}
}

// TestJailCapabilities: every capability set is empty in the jail,
// whatever user runs the server (root here in CI, and again as an
// ordinary user: see scripts/test).
func TestJailCapabilities(t *testing.T) {
	requireJail(t)
	got := output(t, selfCeiling(false), "caps")
	for _, set := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if !strings.Contains(got, set+":\t0000000000000000") {
			t.Errorf("%s is not empty in the jail:\n%s", set, got)
		}
	}
}

// TestJailNoPrograms: under NoPrograms nothing but the program's own
// files runs: not another program through the dynamic loader (which
// Landlock alone lets through: it checks execve, not the loader's mmap),
// not a copy the session wrote.
func TestJailNoPrograms(t *testing.T) {
	requireJail(t)
	prog, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	prog, _ = filepath.EvalSymlinks(prog)
	loaders := Interpreters(prog, "")
	if len(loaders) == 0 {
		t.Fatalf("%s is static: no loader to abuse", prog)
	}
	// What a dynamic CLI's ceiling allows: itself, its loader and its
	// libraries (the test binary may be static; the loader is allowed as
	// for the CLI, which is not).
	jail := func(noPrograms bool, write ...string) *Ceiling {
		c := selfCeiling(noPrograms)
		c.Exec = append(c.Exec, loaders[0])
		c.Map = append(c.Map, Libraries(prog)...)
		c.Write = write
		return c
	}
	dir := t.TempDir()
	copied := filepath.Join(dir, "true")
	if b, err := os.ReadFile(prog); err != nil || os.WriteFile(copied, b, 0o755) != nil {
		t.Fatal(err)
	}
	via := loaders[0] + " " + prog
	// The control: with programs allowed, the loader runs it.
	if !try(t, jail(false), "exec "+via) {
		t.Fatalf("%s refused with programs allowed", via)
	}
	for _, c := range []*Ceiling{jail(true), jail(true, dir)} {
		if try(t, c, "exec "+via) {
			t.Errorf("%s ran under %s", via, c)
		}
		if try(t, c, "exec "+loaders[0]+" "+copied) {
			t.Errorf("a copy the session wrote ran through the loader under %s", c)
		}
		if try(t, c, "exec "+copied) {
			t.Errorf("a copy the session wrote ran under %s", c)
		}
	}
}

// TestJailPrivate: a process's private directory is there, its
// neighbours (other processes' private directories) are not.
func TestJailPrivate(t *testing.T) {
	requireJail(t)
	root := t.TempDir()
	mine, other := filepath.Join(root, "mine"), filepath.Join(root, "other")
	for _, d := range []string{mine, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "mcp.json"), []byte(`{"secret":"`+filepath.Base(d)+`"}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := selfCeiling(false)
	c.Alone = []string{mine}
	if got := strings.Fields(output(t, c, "ls "+root)); !slices.Equal(got, []string{"mine"}) {
		t.Errorf("the jail shows %v in %s, want [mine]", got, root)
	}
	if !try(t, c, "read "+filepath.Join(mine, "mcp.json")) {
		t.Error("its own file is unreadable")
	}
	if !try(t, c, "write "+filepath.Join(mine, "tmpfile")) {
		t.Error("its own directory is not writable")
	}
	if _, err := os.Stat(filepath.Join(mine, "tmpfile")); err != nil {
		t.Errorf("a file written in the jail is not in the directory outside: %v", err)
	}
}

// BenchmarkJailStart times a start of /bin/true to its exit: directly,
// through the wrapper with a Landlock ruleset, in the jail, and in the
// jail under "no programs" with the mounts a CLI needs (its files kept
// executable: CLAUDE_BIN's, when set). The difference is the wrapper's and
// the jail's cost on a process's start (BENCHMARKS.md). JAIL_WRAPPER names
// the binary to time as the wrapper (the server's: it calls Init first);
// by default this test binary, which initializes far fewer packages.
func BenchmarkJailStart(b *testing.B) {
	if w := os.Getenv("JAIL_WRAPPER"); w != "" {
		wrapper = func() (string, error) { return w, nil }
		b.Cleanup(func() { wrapper = os.Executable })
	}
	prog, err := exec.LookPath("true")
	if err != nil {
		b.Fatal(err)
	}
	prog, _ = filepath.EvalSymlinks(prog)
	keep := append([]string{prog}, Interpreters(prog, "")...)
	libs := Libraries(prog)
	if cli := os.Getenv("CLAUDE_BIN"); cli != "" {
		keep = append(keep, cli)
		libs = append(libs, Libraries(cli)...)
	}
	for _, tc := range []struct {
		name string
		c    *Ceiling
	}{
		{"direct", &Ceiling{}},
		{"landlock", &Ceiling{NoPrograms: true, Exec: keep}},
		{"jail", &Ceiling{Jail: true}},
		{"jail_no_programs", &Ceiling{Jail: true, NoPrograms: true, Exec: keep, Map: libs, Alone: []string{b.TempDir()}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if tc.c.Jail && JailAvailable() != nil {
				b.Skip(JailAvailable())
			}
			for b.Loop() {
				cmd := exec.Command(prog)
				if err := tc.c.Start(cmd); err != nil {
					b.Fatal(err)
				}
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
