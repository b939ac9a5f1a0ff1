package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// answer returns an elicitation handler that counts questions, records the
// last message and answers with decision (or declines when decision is
// "decline", or never answers when it is "hang").
func answer(decision string, asked *atomic.Int32, last *atomic.Value) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		last.Store(r.Params.Message)
		switch decision {
		case "decline":
			return &mcp.ElicitResult{Action: "decline"}, nil
		case "hang":
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision, "reason": "not today"}}, nil
	}
}

func TestE2EPermissionElicitation(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{"2025-11-25", ""} {
		t.Run("allow_once/"+proto, func(t *testing.T) {
			t.Parallel()
			var asked atomic.Int32
			var last atomic.Value
			e := startE2E(t, e2eOptions{protocol: proto, elicit: answer("allow_once", &asked, &last)})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, out := e.call(t, ctx, "claude_direct_query", map[string]any{"cwd": e.cwd,
				"prompt": "TOOL_BASH[touch made_by_tool.txt && echo hi]"}, nil)
			if res.IsError {
				t.Fatalf("query: %s", text(res))
			}
			if _, err := os.Stat(filepath.Join(e.cwd, "made_by_tool.txt")); err != nil {
				t.Errorf("the allowed Bash command did not create the file: %v", err)
			}
			if out["finalText"] != "Tool said: hi" || asked.Load() != 1 {
				t.Errorf("finalText=%v asked=%d", out["finalText"], asked.Load())
			}
			msg, _ := last.Load().(string)
			if !strings.Contains(msg, "touch made_by_tool.txt") || !strings.Contains(msg, e.cwd) {
				t.Errorf("question does not show the command and cwd: %q", msg)
			}
		})
	}

	t.Run("allow_session", func(t *testing.T) {
		t.Parallel()
		var asked atomic.Int32
		var last atomic.Value
		e := startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: answer("allow_session", &asked, &last)})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, out := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd}, nil)
		sid := out["sessionId"]
		for i := 0; i < 2; i++ {
			res, out := e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid,
				"prompt": "TOOL_BASH[touch twice.txt]"}, nil)
			if ft, _ := out["finalText"].(string); res.IsError || !strings.HasPrefix(ft, "Tool said:") {
				t.Fatalf("query %d: %s", i, text(res))
			}
		}
		if n := asked.Load(); n != 1 {
			t.Errorf("asked %d times, want 1 (allow for the session)", n)
		}
	})

	t.Run("decline", func(t *testing.T) {
		t.Parallel()
		var asked atomic.Int32
		var last atomic.Value
		e := startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: answer("decline", &asked, &last)})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, out := e.call(t, ctx, "claude_direct_query", map[string]any{"cwd": e.cwd,
			"prompt": "TOOL_BASH[touch nope.txt && echo hi]"}, nil)
		if res.IsError {
			t.Fatalf("a declined tool should end the turn normally: %s", text(res))
		}
		if ft, _ := out["finalText"].(string); !strings.HasPrefix(ft, "Tool error:") || !strings.Contains(ft, "declined") {
			t.Errorf("the model did not get the refusal: %q", ft)
		}
		if _, err := os.Stat(filepath.Join(e.cwd, "nope.txt")); err == nil {
			t.Error("the declined command ran")
		}
		md, _ := out["metadata"].(map[string]any)
		if d, _ := md["permissionDenials"].([]any); len(d) != 1 {
			t.Errorf("permissionDenials = %v", md["permissionDenials"])
		}
	})

	t.Run("no_elicitation_policy", func(t *testing.T) {
		t.Parallel()
		e := startE2E(t, e2eOptions{protocol: "2025-11-25"})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, out := e.call(t, ctx, "claude_direct_query", map[string]any{"cwd": e.cwd,
			"prompt": "TOOL_BASH[touch nope.txt && echo hi]"}, nil)
		ft, _ := out["finalText"].(string)
		for _, want := range []string{"Permission to use Bash was denied", "did not declare elicitation", "allowedTools"} {
			if !strings.Contains(ft, want) {
				t.Errorf("policy message lacks %q: %q", want, ft)
			}
		}
	})

	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		var asked atomic.Int32
		var last atomic.Value
		e := startE2E(t, e2eOptions{protocol: "2025-11-25", args: []string{"--permission-timeout", "1s"},
			elicit: answer("hang", &asked, &last)})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		start := time.Now()
		_, out := e.call(t, ctx, "claude_direct_query", map[string]any{"cwd": e.cwd,
			"prompt": "TOOL_BASH[touch nope.txt && echo hi]"}, nil)
		if ft, _ := out["finalText"].(string); !strings.Contains(ft, "did not answer within 1s") {
			t.Errorf("finalText = %q", ft)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("took %s", d)
		}
	})

	t.Run("interrupt_while_pending", func(t *testing.T) {
		t.Parallel()
		var asked atomic.Int32
		var last atomic.Value
		e := startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: answer("hang", &asked, &last)})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, out := e.call(t, ctx, "claude_session_create", map[string]any{"cwd": e.cwd}, nil)
		sid := out["sessionId"]
		done := make(chan map[string]any, 1)
		go func() {
			_, out, err := e.callErr(ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "TOOL_BASH[touch nope.txt]"}, nil)
			if err != nil {
				t.Errorf("the query: %v", err)
			}
			done <- out
		}()
		for asked.Load() == 0 {
			select {
			case <-ctx.Done():
				t.Fatal("never asked")
			case <-time.After(20 * time.Millisecond):
			}
		}
		e.call(t, ctx, "claude_chat_interrupt", map[string]any{"sessionId": sid}, nil)
		select {
		case out := <-done:
			if out["interrupted"] != true {
				t.Errorf("query output = %v", out)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the query did not return after the interrupt")
		}
		res, out := e.call(t, ctx, "claude_chat_query", map[string]any{"sessionId": sid, "prompt": "still here"}, nil)
		if res.IsError || out["finalText"] == "" {
			t.Errorf("session after interrupt: %v", out)
		}
		reqs := e.api.MessageRequests()
		if got := reqs[len(reqs)-1].LastUserText(); !strings.Contains(got, "still here") {
			t.Errorf("the next query did not reach the API: last user text %q", got)
		}
	})
}
