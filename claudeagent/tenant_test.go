package claudeagent

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
)

// TestTextsOffTheCommandLine: a command line is readable by every process
// of the machine (/proc/PID/cmdline), so the options that carry text — the
// system prompts, the agents, the JSON schema, the MCP configuration with
// its headers, a settings object — never appear there: the texts go in
// initialize, the documents in files of the process's private directory
// (mode 0600, in a directory of 0700), which is removed when the process
// ends.
func TestTextsOffTheCommandLine(t *testing.T) {
	log := filepath.Join(t.TempDir(), "args.jsonl")
	opts := fakeOptions(t, fakecli.EnvArgsLog, log)
	secrets := []string{"SYS-SECRET", "APPEND-SECRET", "AGENT-SECRET", "SCHEMA-SECRET", "HEADER-SECRET", "SETTINGS-SECRET"}
	opts.SystemPrompt = secrets[0]
	opts.AppendSystemPrompt = secrets[1]
	opts.Agents = json.RawMessage(`{"r":{"description":"d","prompt":"` + secrets[2] + `"}}`)
	opts.JSONSchema = json.RawMessage(`{"type":"object","description":"` + secrets[3] + `"}`)
	opts.MCPConfig = `{"mcpServers":{"h":{"type":"http","url":"https://example.com/mcp","headers":{"Authorization":"Bearer ` + secrets[4] + `"}}}}`
	opts.Settings = json.RawMessage(`{"env":{"X":"` + secrets[5] + `"}}`)
	p := startFake(t, opts)
	if runtime.GOOS == "linux" {
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID()) + "/cmdline")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if bytes.Contains(cmdline, []byte(s)) {
				t.Errorf("%s is on the command line: %q", s, cmdline)
			}
		}
	}
	initialize(t, p)
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	if err := json.Unmarshal(bytes.TrimSpace(data), &args); err != nil {
		t.Fatalf("args log %s: %v", data, err)
	}
	var init, files string
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "initialize="):
			init = a
		case strings.HasPrefix(a, "file:"):
			files += a
		case strings.HasPrefix(a, "--mcp-config=") || strings.HasPrefix(a, "--settings="):
			_, path, _ := strings.Cut(a, "=")
			fi, err := os.Stat(path)
			if err != nil || fi.Mode().Perm() != 0o600 || !strings.HasPrefix(path, p.private) {
				t.Errorf("%s: %v, %v (want a 0600 file in the private directory %s)", a, fi, err, p.private)
			}
		}
	}
	for _, s := range secrets[:4] {
		if !strings.Contains(init, s) {
			t.Errorf("%s is not in the initialize request %s", s, init)
		}
	}
	for _, s := range secrets[4:] {
		if !strings.Contains(files, s) {
			t.Errorf("%s is not in the files the CLI read: %s", s, files)
		}
	}
	if fi, err := os.Stat(p.private); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the private directory: %v, %v", fi, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.private); !os.IsNotExist(err) {
		t.Errorf("the private directory outlives the process: %v", err)
	}
}
