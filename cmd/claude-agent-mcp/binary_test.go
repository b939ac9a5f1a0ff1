package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The server binary of this package's tests that start it (--print-setup
// through a symlink, the check of the CLI at start), built once per test
// run; or the one E2E_SERVER_BIN names, built before (as e2e's).
var server struct {
	once sync.Once
	bin  string
	err  error
}

// serverBinary builds the server once per test run.
func serverBinary(t *testing.T) string {
	t.Helper()
	server.once.Do(func() {
		if bin := os.Getenv("E2E_SERVER_BIN"); bin != "" {
			server.bin = bin
			return
		}
		dir, err := os.MkdirTemp("", "claude-agent-mcp-bin-")
		if err != nil {
			server.err = err
			return
		}
		server.bin = filepath.Join(dir, "claude-agent-mcp")
		out, err := exec.Command("go", "build", "-race", "-o", server.bin, ".").CombinedOutput()
		if err != nil {
			server.err = err
			server.bin = string(out)
		}
	})
	if server.err != nil {
		t.Fatalf("building the server: %v\n%s", server.err, server.bin)
	}
	return server.bin
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// TestNoReflectMethod keeps the server binary free of method lookups by
// name (reflect.Value.MethodByName, as text/template and html/template
// do): one such call makes the linker keep every exported method of every
// reachable type, 3.5 MB more binary, nearly all of it resident (see
// BENCHMARKS.md). The linker's dependency dump marks the functions that
// make such calls <ReflectMethod>.
func TestNoReflectMethod(t *testing.T) {
	if testing.Short() {
		t.Skip("links the server (-short)")
	}
	out, err := exec.Command("go", "build", "-ldflags=-dumpdep", "-o", t.TempDir()+"/server", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -ldflags=-dumpdep: %v\n%s", err, tail(string(out), 2000))
	}
	var culprits []string
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, "<ReflectMethod>") {
			culprits = append(culprits, strings.TrimSpace(line))
		}
	}
	if len(culprits) > 0 {
		t.Errorf("the server binary looks methods up by name, which keeps every exported method in it; the linker names:\n%s",
			strings.Join(culprits[:min(len(culprits), 10)], "\n"))
	}
	if !strings.Contains(string(out), "main.main") {
		t.Errorf("the dependency dump does not name main.main; has -dumpdep changed its form?\n%s", tail(string(out), 500))
	}
}
