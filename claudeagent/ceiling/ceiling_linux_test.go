package ceiling

import (
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/e2eenv"
)

// childEnv makes the test binary a child that tries one thing and says
// how it went on stdout (see TestMain).
const childEnv = "CEILING_TEST_CHILD"

func TestMain(m *testing.M) {
	Init()
	if what := os.Getenv(childEnv); what != "" {
		os.Exit(child(what))
	}
	os.Exit(m.Run())
}

// child tries what ("exec PATH [ARG…]", "read PATH", "write PATH", or
// one of jailChild's) and exits 0 when it could, 3 when the kernel refused
// (EACCES/EPERM), 4 otherwise.
func child(what string) int {
	verb, path, _ := strings.Cut(what, " ")
	if code, ok := jailChild(verb, path); ok {
		return code
	}
	var err error
	switch verb {
	case "exec":
		args := strings.Fields(path)
		out, runErr := exec.Command(args[0], args[1:]...).CombinedOutput()
		err = runErr
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == 127 && strings.Contains(string(out), "failed to map segment") {
			// The loader's own refusal to map a file: the kernel's.
			err = os.ErrPermission
		} else if err != nil {
			os.Stderr.Write(out)
		}
	case "read":
		_, err = os.ReadFile(path)
	case "write":
		err = os.WriteFile(path, []byte("x"), 0o600)
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, os.ErrPermission):
		return 3
	}
	os.Stderr.WriteString(err.Error())
	return 4
}

// try runs the test binary under c trying what, and reports whether it
// could (false: the kernel refused).
func try(t *testing.T, c *Ceiling, what string) bool {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), childEnv+"="+what)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := c.Start(cmd); err != nil {
		t.Fatalf("starting the child under %s: %v", c, err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true
	case errors.As(err, &ee) && ee.ExitCode() == 3:
		return false
	}
	t.Fatalf("%s: %v %s", what, err, stderr.String())
	return false
}

// requireLandlock fails under CI=true where Landlock is missing (the
// machines this project is tested on have it), and skips elsewhere.
func requireLandlock(t *testing.T) {
	t.Helper()
	if _, err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Landlock is needed for this test: %v", err)
		}
		t.Skip(err)
	}
}

func TestNoPrograms(t *testing.T) {
	requireLandlock(t)
	self, _ := os.Executable()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	sh, _ = filepath.EvalSymlinks(sh)
	open := &Ceiling{}
	if !try(t, open, "exec "+sh) {
		t.Fatal("sh refused without a ceiling")
	}
	c := &Ceiling{NoPrograms: true, Exec: append([]string{self}, Interpreters(self, "")...)}
	// The child itself runs (execve of the test binary), but not sh.
	if try(t, c, "exec "+sh) {
		t.Errorf("sh ran under %s", c)
	}
	allowed := c.With(append([]string{sh}, Interpreters(sh, "")...), nil, nil)
	if !try(t, &allowed, "exec "+sh) {
		t.Errorf("sh refused under %s", &allowed)
	}
	// Nothing written can be executed: a copy of sh in a directory the
	// process may write is no program of its own.
	dir := t.TempDir()
	copied := filepath.Join(dir, "sh")
	if b, err := os.ReadFile(sh); err != nil || os.WriteFile(copied, b, 0o755) != nil {
		t.Fatal(err)
	}
	files := c.With(Interpreters(sh, ""), []string{"/usr", "/lib", "/lib64", "/etc/ld.so.cache"}, []string{dir, "/dev/null"})
	files.Files = true
	if try(t, &files, "exec "+copied) {
		t.Errorf("a program in a writable directory ran under %s", &files)
	}
	// The control: the same ceiling with programs lets it run, so the
	// refusal above is the execute right's.
	files.NoPrograms = false
	if !try(t, &files, "exec "+copied) {
		t.Errorf("a program in a writable directory refused under %s", &files)
	}
	// Files are not restricted by NoPrograms alone.
	if !try(t, c, "read /etc/hostname") {
		t.Errorf("a read refused under %s", c)
	}
}

func TestFiles(t *testing.T) {
	requireLandlock(t)
	self, _ := os.Executable()
	root, err := e2eenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	in, out := t.TempDir(), t.TempDir()
	secret := filepath.Join(out, "secret")
	if err := os.WriteFile(secret, []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Ceiling{Files: true, Read: []string{"/usr", "/lib", "/lib64", "/etc/ld.so.cache", self, filepath.Join(root, "go.mod")}, Write: []string{in}}
	for _, tc := range []struct {
		what string
		want bool
	}{
		{"write " + filepath.Join(in, "f"), true},
		{"read " + filepath.Join(root, "go.mod"), true},
		{"read " + secret, false},
		{"write " + filepath.Join(out, "g"), false},
		{"write " + filepath.Join(root, "go.mod"), false}, // read-only
		{"read /etc/hostname", false},
	} {
		if got := try(t, c, tc.what); got != tc.want {
			t.Errorf("%s under %s: allowed %v, want %v", tc.what, c, got, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "g")); err == nil {
		t.Error("the refused write made its file")
	}
}

func TestRestrictsAndString(t *testing.T) {
	var none *Ceiling
	if none.Restricts() || (&Ceiling{Read: []string{"/x"}}).Restricts() {
		t.Error("a ceiling without NoPrograms or Files restricts")
	}
	if s := none.String(); s != "none" {
		t.Errorf("String of nil = %q", s)
	}
	c := &Ceiling{NoPrograms: true, Exec: []string{"/a"}}
	if !c.Restricts() || !strings.Contains(c.String(), "executes only /a") {
		t.Errorf("%s", c)
	}
}

// The server's other threads never carry the ceiling: after a restricted
// start, this process still runs programs and reads files.
func TestServerUnrestricted(t *testing.T) {
	requireLandlock(t)
	self, _ := os.Executable()
	for range 4 {
		try(t, &Ceiling{NoPrograms: true, Files: true, Exec: append([]string{self}, Interpreters(self, "")...), Read: []string{"/usr", "/lib", "/lib64"}}, "read /etc/hostname")
	}
	if err := exec.Command("sh", "-c", "true").Run(); err != nil {
		t.Fatalf("this process can no longer run sh: %v", err)
	}
	if _, err := os.ReadFile("/etc/hostname"); err != nil {
		t.Fatalf("this process can no longer read: %v", err)
	}
}

// TestNeedsInit: a binary that does not call Init is refused instead of
// being run again as its own wrapper (which would start itself for ever).
func TestNeedsInit(t *testing.T) {
	requireLandlock(t)
	initCalled.Store(false)
	defer initCalled.Store(true)
	err := (&Ceiling{NoPrograms: true}).Start(exec.Command("/bin/true"))
	if err == nil || !strings.Contains(err.Error(), "ceiling.Init") {
		t.Fatalf("a start without Init = %v", err)
	}
}

// TestInterpreters: the loader of a dynamic binary is the one debug/elf
// reads; a script's interpreter; nothing for a static binary.
func TestInterpreters(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	sh, _ = filepath.EvalSymlinks(sh)
	f, err := elf.Open(sh)
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			_, _ = p.ReadAt(b, 0)
			want = strings.TrimRight(string(b), "\x00")
		}
	}
	f.Close()
	if got := Interpreters(sh, ""); want == "" || len(got) != 1 || got[0] != want {
		t.Errorf("Interpreters(%s) = %v, want [%s]", sh, got, want)
	}
	script := filepath.Join(t.TempDir(), "s")
	if err := os.WriteFile(script, []byte("#!"+sh+" -e\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := Interpreters(script, ""); len(got) != 2 || got[0] != sh || got[1] != want {
		t.Errorf("Interpreters(script) = %v, want [%s %s]", got, sh, want)
	}
	static := filepath.Join(t.TempDir(), "static")
	out, err := exec.Command("go", "build", "-o", static, "-ldflags=-s", "./testdata/static").CombinedOutput()
	if err != nil {
		t.Fatalf("building a static binary: %v\n%s", err, out)
	}
	if got := Interpreters(static, ""); len(got) != 0 {
		t.Errorf("Interpreters(static) = %v, want none", got)
	}
}
