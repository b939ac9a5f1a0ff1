// Package testkit holds the tests' small helpers: polling for state
// another goroutine changes (Until, Within), a buffer for concurrent
// writers (Buffer), the --tokens-file of tests (WriteTokens), and a git
// repository to work in (GitRepo). Its
// subpackages are the fakes and harnesses: the fake CLI and API, the MCP
// test client, PostgreSQL, the leak check, the real CLI's environment.
package testkit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// every is how often Until and Within look at a condition: for state that
// another goroutine (a timer, a pump, a process) changes with nothing to
// wait on, not for synchronisation that a channel or a result can give.
const every = 5 * time.Millisecond

// Until polls cond until it holds, or fails tb after d naming what it
// waited for.
func Until(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !Within(d, cond) {
		tb.Fatalf("timed out after %s waiting for %s", d, what)
	}
}

// Within polls cond for at most d and reports whether it came to hold.
func Within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(every)
	}
	return true
}

// Buffer is a bytes.Buffer whose Write and String may be called
// concurrently: the tests' logs and audit logs that a server writes while
// the test reads them. The zero value is empty and ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TokenHash is the SHA-256 (hex) of a token, as the tokens file lists it.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// WriteTokens writes a tokens file naming users, each with the token
// "<user>-secret".
func WriteTokens(t testing.TB, file string, users ...string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# users\n")
	for _, u := range users {
		b.WriteString(u + ":" + TokenHash(u+"-secret") + "\n")
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// GitRepo makes a repository on main whose first commit holds files (name
// to content; an empty commit when there are none), without the user's
// git configuration, and returns it with a git that runs there and fails
// tb when git fails.
func GitRepo(tb testing.TB, files map[string]string) (string, func(args ...string) string) {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		tb.Fatalf("git is needed: %v", err)
	}
	repo := tb.TempDir()
	git := func(args ...string) string {
		tb.Helper()
		out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...).CombinedOutput()
		if err != nil {
			tb.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
		git("add", name)
	}
	git("commit", "-q", "--allow-empty", "-m", "first")
	return repo, git
}
