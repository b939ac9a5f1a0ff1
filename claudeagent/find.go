package claudeagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
)

// MinVersion is the oldest CLI this package drives; older ones lack parts of
// the control protocol.
const MinVersion = "2.0.0"

// OldestTested is the oldest CLI the tests run against (besides the newest);
// an older one may work but is not supported.
const OldestTested = "2.1.197"

// InstallHint says how to get the CLI.
const InstallHint = "install it with: npm install -g @anthropic-ai/claude-code"

// ErrCLINotFound reports that no claude binary could be found.
var ErrCLINotFound = errors.New("claude CLI not found")

// FindCLI returns the claude binary to run: path itself when set (it must
// exist and be a file), else "claude" looked up on PATH (on Windows also
// claude.cmd and claude.exe). The error names what was searched and how to
// install the CLI.
func FindCLI(path string) (string, error) {
	if path != "" {
		if strings.ContainsRune(path, os.PathSeparator) || strings.Contains(path, "/") {
			st, err := os.Stat(path)
			if err != nil {
				return "", fmt.Errorf("%w at %s (%v); %s", ErrCLINotFound, path, err, InstallHint)
			}
			if st.IsDir() {
				return "", fmt.Errorf("%w: %s is a directory; %s", ErrCLINotFound, path, InstallHint)
			}
			return path, nil
		}
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("%w: %q is not on PATH (%s); %s", ErrCLINotFound, path, os.Getenv("PATH"), InstallHint)
		}
		return p, nil
	}
	names := []string{"claude"}
	if runtime.GOOS == "windows" {
		names = append(names, "claude.cmd", "claude.exe")
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: searched PATH (%s) for %s; %s", ErrCLINotFound,
		os.Getenv("PATH"), strings.Join(names, ", "), InstallHint)
}

var versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(\d+)\.(\d+)\.(\d+)`) })

// ParseVersion extracts X.Y.Z from `claude --version` output such as
// "2.1.197 (Claude Code)".
func ParseVersion(out string) (string, bool) {
	m := versionRE().FindString(out)
	return m, m != ""
}

// CompareVersions compares two X.Y.Z versions: -1, 0 or 1.
func CompareVersions(a, b string) int {
	pa, pb := versionRE().FindStringSubmatch(a), versionRE().FindStringSubmatch(b)
	for i := 1; i <= 3; i++ {
		var x, y int
		if pa != nil {
			x, _ = strconv.Atoi(pa[i])
		}
		if pb != nil {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// CLIVersion runs `path --version` (bounded by ctx and 10 s) and returns the
// version. A CLI older than [MinVersion] is an error naming the path.
func CLIVersion(ctx context.Context, path string) (string, error) {
	return CLIVersionEnv(ctx, path, nil)
}

// CLIVersionEnv is [CLIVersion] with env added to the inherited environment,
// as Options.Env is for a [Process].
func CLIVersionEnv(ctx context.Context, path string, env map[string]string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = (&Options{Env: env}).Environ("")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("running %s --version: %v: %s; %s", path, err, strings.TrimSpace(string(out)), InstallHint)
	}
	v, ok := ParseVersion(string(out))
	if !ok {
		return "", fmt.Errorf("%s --version printed no version (%q); is it the Claude Code CLI? %s", path, strings.TrimSpace(string(out)), InstallHint)
	}
	if CompareVersions(v, MinVersion) < 0 {
		return v, fmt.Errorf("claude CLI at %s is version %s, older than the minimum %s; update it with: npm install -g @anthropic-ai/claude-code", path, v, MinVersion)
	}
	return v, nil
}

// AuthStatus is what `claude auth status` reports (the fields that CLI
// 2.1.197 and 2.1.330 share).
type AuthStatus struct {
	LoggedIn bool
	// AuthMethod is how: api_key, api_key_helper, oauth_token, claude.ai,
	// third_party (Bedrock, Vertex, …) or none.
	AuthMethod string
	// APIProvider is firstParty, bedrock, vertex, ….
	APIProvider string
}

// CLIAuthStatus runs `path auth status --json` (bounded by ctx and 10 s)
// with env added to the inherited environment, as [CLIVersionEnv] does. The
// CLI answers from its environment, settings (apiKeyHelper) and stored
// credentials, without an API request; not logged in, it exits 1 and still
// prints the status. CLIs before 2.1.197 are not known to have the command.
func CLIAuthStatus(ctx context.Context, path string, env map[string]string) (AuthStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "auth", "status", "--json")
	cmd.Env = (&Options{Env: env}).Environ("")
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var st struct {
		LoggedIn    *bool  `json:"loggedIn"`
		AuthMethod  string `json:"authMethod"`
		APIProvider string `json:"apiProvider"`
	}
	if err := json.Unmarshal(out, &st); err != nil || st.LoggedIn == nil {
		if runErr == nil {
			runErr = errors.New("no loggedIn field")
		}
		return AuthStatus{}, fmt.Errorf("running %s auth status: %v: %s", path, runErr,
			textcut.Cut(strings.TrimSpace(string(out)+" "+stderr.String()), 300))
	}
	return AuthStatus{LoggedIn: *st.LoggedIn, AuthMethod: st.AuthMethod, APIProvider: st.APIProvider}, nil
}
