// Package e2eenv holds helpers for end-to-end tests that run the real
// Claude Code CLI against a fake Messages API (internal/testkit/fakeapi): finding
// the binary and building an offline environment for it. It knows the CLI
// and its environment only, never the server's packages.
package e2eenv

import (
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// InstalledCLI is where scripts/test installs the newest supported CLI,
// relative to the module root. (The oldest supported one is in
// .tools/node_modules/claude-code-oldest; both packages declare the bin
// "claude", so .tools/node_modules/.bin/claude is not relied upon.)
var InstalledCLI = filepath.Join(".tools", "node_modules", "@anthropic-ai", "claude-code", "bin", "claude.exe")

// FindClaude returns the claude binary to test against: $CLAUDE_BIN, else
// <module root>/[InstalledCLI] (the newest supported CLI, which scripts/test
// installs), else claude on PATH. When none is found the test is skipped, or
// fails when CI=true. A CLAUDE_BIN that is not an executable file fails the
// test.
func FindClaude(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CLAUDE_BIN"); p != "" {
		if !isExecutable(p) {
			t.Fatalf("CLAUDE_BIN=%q is not an executable file", p)
		}
		return p
	}
	if root, err := ModuleRoot(); err == nil {
		if p := filepath.Join(root, InstalledCLI); isExecutable(p) {
			return p
		}
	}
	if p, err := exec.LookPath("claude"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("claude CLI not found (set CLAUDE_BIN, run scripts/test to install it into .tools/, or put it on PATH) and CI=true")
	}
	t.Skip("claude CLI not found; set CLAUDE_BIN or run scripts/test to run the real-CLI tests")
	return ""
}

// Env returns a fresh HOME (a t.TempDir) and the environment overrides that
// run the CLI offline against the fake API at apiURL. The map is meant for
// claudeagent.Options.Env, which is applied on top of the inherited
// environment: inherited variables that could authenticate the CLI, point it
// elsewhere or change its behaviour (ANTHROPIC_*, CLAUDE_CODE_* except
// CLAUDE_CODE_ENTRYPOINT, proxies) are overridden with "" so that they count
// as unset, and CLAUDE_CONFIG_DIR is set to <home>/.claude, its default.
// (CLAUDECODE is removed by claudeagent itself.)
//
// Because HOME is a t.TempDir, register the process's Close with t.Cleanup
// after calling Env, so that the CLI is gone before the directory is removed.
func Env(t testing.TB, apiURL string) (home string, env map[string]string) {
	t.Helper()
	home = t.TempDir()
	return home, OfflineEnv(home, apiURL)
}

// OfflineEnv is the environment of Env with HOME at home, for callers
// without a testing.TB (the benchmark driver).
func OfflineEnv(home, apiURL string) map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if neutralised(k) {
			env[k] = ""
		}
	}
	maps.Copy(env, FakeAPIEnv(home, apiURL))
	// Its default, set explicitly: the CLI reads an empty value as "".
	env["CLAUDE_CONFIG_DIR"] = filepath.Join(home, ".claude")
	env["no_proxy"] = env["NO_PROXY"] // and its lower-case spelling
	if runtime.GOOS == "windows" {
		env["USERPROFILE"] = home
	}
	return env
}

// FakeAPIEnv is what points the CLI at the fake API at apiURL, with HOME
// at home, and keeps it off the network otherwise: the overrides that
// [OfflineEnv] and internal/cmd/record (which drops the inherited
// variables in its own way) both start from.
func FakeAPIEnv(home, apiURL string) map[string]string {
	return map[string]string{
		"HOME":               home,
		"ANTHROPIC_BASE_URL": apiURL,
		"ANTHROPIC_API_KEY":  "sk-test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_AUTOUPDATER":                      "1",
		// The tests run as root in containers; the CLI refuses
		// bypassPermissions as root without it.
		"IS_SANDBOX": "1",
		"NO_PROXY":   "127.0.0.1,localhost",
	}
}

// neutralised reports whether an inherited variable must not reach the CLI.
func neutralised(k string) bool {
	switch strings.ToUpper(k) {
	case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY":
		return true
	case "CLAUDE_CODE_ENTRYPOINT":
		// claudeagent sets its own; an override here would win over it.
		return false
	}
	return strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "CLAUDE_CODE_")
}

// ModuleRoot walks up from the working directory (a package directory under
// go test) to the directory holding go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	return runtime.GOOS == "windows" || fi.Mode().Perm()&0o111 != 0
}
