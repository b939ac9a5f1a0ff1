package mcptools

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// FuzzToolArguments sends arbitrary arguments to every tool. Each call must
// be answered (a result or a JSON-RPC error), quickly, and the server must
// keep serving; no argument gets past toolargs.Check to be refused by the SDK's
// own schema validation (whose errors name no parameter plainly). The CLI
// path points nowhere, so no process is started.
func FuzzToolArguments(f *testing.F) {
	seeds := []string{
		`{}`, `null`, `[]`, `{"sessionId":""}`, `{"sessionId":"x","prompt":"hi"}`,
		`{"cwd":"/","model":"opus","permissionMode":"plan"}`, `{"cwd":"relative"}`,
		`{"mcpServers":{"a":{"command":"x"}},"strictMcpConfig":true}`, `{"mcpServers":{"a":1}}`,
		`{"prompt":"hi","waitSeconds":-1}`, `{"sessionId":"x","cursor":"-5","limit":1000}`,
		`{"allowedTools":["Bash(git:*)"],"maxTurns":3,"addDirs":["/tmp"]}`, `{"resumeSessionId":"00000000-0000-0000-0000-000000000000","forkSession":true}`,
		`{"model":"claude-sonnet-4-5[1m]"}`, `{"profile":"../../etc"}`, `{"prompt":"\u0000"}`,
		`{"sessionId":null}`, `{"sessionId":"x","limit":3.0}`, `{"prompt":"x","waitSeconds":1e3}`, `{"images":[{"path":1}]}`,
		`{"settingSources":["user",null]}`, `{"mcpServers":{"a":{"command":"x"},"b":[]}}`, `{"permissionMode":"plan","effort":"max"}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i), s)
	}
	srv := NewServer(sessions.NewManager(sessions.Config{CLIPath: filepath.Join(f.TempDir(), "no-claude")}), Options{Version: "fuzz"})
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		f.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "fuzz", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		f.Fatal(err)
	}
	defer cs.Close()
	tools := Tools()
	f.Fuzz(func(t *testing.T, which uint8, args string) {
		var v any
		if json.Unmarshal([]byte(args), &v) != nil {
			v = args // not JSON: send it as a string
		}
		tool := tools[int(which)%len(tools)]
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: tool.Name, Arguments: v})
		if cctx.Err() != nil {
			t.Fatalf("%s(%s) was not answered in 10 s", tool.Name, args)
		}
		if err == nil && res == nil {
			t.Fatalf("%s(%s): no result and no error", tool.Name, args)
		}
		if err == nil && res.IsError && strings.Contains(resText(res), `validating "arguments"`) {
			t.Fatalf("%s(%s): refused by the SDK's validation, not toolargs.Check: %s", tool.Name, args, resText(res))
		}
	})
}
