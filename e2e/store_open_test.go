package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakecli"
)

// TestDefaultStoreUnopenable: when the default store (under the user's
// state directory) cannot be opened, the server still serves, keeps
// sessions in memory, logs why, and says persisted: false in a create's
// result; a store the operator named with --store that cannot be opened
// stops the start, naming it.
func TestDefaultStoreUnopenable(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	notDir := filepath.Join(home, "state-is-a-file")
	if err := os.WriteFile(notDir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	claude, fenv := fakecli.Command(t)
	env := append(append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+notDir), pairs(fenv)...)

	t.Run("default", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var stderr testkit.Buffer
		cmd := exec.Command(serverBinary(t), "--claude-path", claude, "--warm-spares", "0")
		cmd.Env, cmd.Dir, cmd.Stderr = env, home, &stderr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "claude_session_create", Arguments: map[string]any{"cwd": home}})
		if err != nil || res.IsError {
			t.Fatalf("create: %v %+v", err, res)
		}
		var out struct {
			SessionID string `json:"sessionId"`
			Persisted *bool  `json:"persisted"`
		}
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatal(err)
		}
		if out.SessionID == "" || out.Persisted == nil || *out.Persisted {
			t.Errorf("create's result %s: want a session with persisted false", data)
		}
		cs.Close()
		_ = cmd.Wait()
		log := stderr.String()
		if !strings.Contains(log, "the session store cannot be opened") || !strings.Contains(log, notDir) {
			t.Errorf("the log does not say that the store could not be opened, and where:\n%s", log)
		}
	})

	t.Run("named", func(t *testing.T) {
		named := filepath.Join(notDir, "sessions.db")
		cmd := exec.Command(serverBinary(t), "--claude-path", claude, "--warm-spares", "0", "--store", named)
		cmd.Env, cmd.Dir, cmd.Stdin = env, home, strings.NewReader("")
		out, err := cmd.CombinedOutput()
		if err == nil || cmd.ProcessState.ExitCode() == 0 || !strings.Contains(string(out), named) {
			t.Fatalf("exit %v, output %q: want a failed start naming %s", err, out, named)
		}
	})
}

// TestDamagedStoreStops: an empty store file stops the start even at the
// default place, naming the file and its backup; --store-recover fresh
// starts an empty store and keeps the damaged file aside; --store-recover
// is refused for PostgreSQL and for a choice it does not know (issue 44).
func TestDamagedStoreStops(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	state := filepath.Join(home, "state")
	db := filepath.Join(state, "claude-agent-mcp", "sessions.db")
	if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	claude, fenv := fakecli.Command(t)
	env := append(append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+state), pairs(fenv)...)
	start := func(args ...string) (string, error) {
		cmd := exec.Command(serverBinary(t), append([]string{"--claude-path", claude, "--warm-spares", "0"}, args...)...)
		cmd.Env, cmd.Dir, cmd.Stdin = env, home, strings.NewReader("")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := start()
	if err == nil || !strings.Contains(out, db) || !strings.Contains(out, db+".bak") || !strings.Contains(out, "--store-recover") {
		t.Fatalf("an empty store at the default place: exit %v, output %q: want a refusal naming %s, its backup and --store-recover", err, out, db)
	}
	if fi, err := os.Stat(db); err != nil || fi.Size() != 0 {
		t.Fatalf("the refused store was changed: %v %v", fi, err)
	}
	if out, err := start("--store-recover", "fresh"); err != nil {
		t.Fatalf("--store-recover fresh: %v\n%s", err, out)
	}
	if aside, _ := filepath.Glob(db + ".damaged-*"); len(aside) != 1 {
		t.Errorf("the damaged file was not kept aside: %v", aside)
	}
	if out, err := start(); err != nil {
		t.Fatalf("the fresh store at the next start: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"--store", "postgres://127.0.0.1:1/x", "--store-recover", "backup"},
		{"--store-recover", "maybe"},
	} {
		if out, err := start(args...); err == nil || !strings.Contains(out, "--store-recover") {
			t.Errorf("%v: exit %v, output %q: want a refusal naming --store-recover", args, err, out)
		}
	}
}
