package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// ---------------------------------------------------------------------------
// Permission policy

func TestPermissionPolicy(t *testing.T) {
	t.Parallel()
	const prompt = "TOOL_BASH[touch made_by_tool.txt && echo hi]"
	toolOf := func(t *testing.T, r *turn.Result) turn.ToolInvocation {
		t.Helper()
		if len(r.ToolInvocations) != 1 {
			t.Fatalf("ToolInvocations = %+v", r.ToolInvocations)
		}
		return r.ToolInvocations[0]
	}
	t.Run("deny_without_asker", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{})
		s := create(t, m, CreateOptions{})
		inv := toolOf(t, query(t, s, prompt, QueryOptions{}))
		for _, want := range []string{"Permission to use Bash was denied", "cannot be asked", "policy is to deny", "switch the session's permission mode", `allowedTools including "Bash"`} {
			if !strings.Contains(inv.Output, want) {
				t.Errorf("deny message lacks %q: %q", want, inv.Output)
			}
		}
		if !inv.IsError {
			t.Errorf("invocation = %+v", inv)
		}
	})
	t.Run("policy_allow", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{PermissionPolicy: "allow"})
		s := create(t, m, CreateOptions{})
		r := query(t, s, prompt, QueryOptions{})
		if inv := toolOf(t, r); inv.IsError || inv.Output != "hi" || len(r.PermissionDenials) != 0 {
			t.Errorf("result = %+v", r)
		}
	})
	t.Run("asker_times_out", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{PermissionTimeout: 200 * time.Millisecond})
		s := create(t, m, CreateOptions{})
		var hadDeadline atomic.Bool
		r := query(t, s, prompt, QueryOptions{AskPermission: func(ctx context.Context, req *turn.PermissionRequest) (*claudeagent.PermissionResult, error) {
			_, ok := ctx.Deadline()
			hadDeadline.Store(ok)
			<-ctx.Done()
			return nil, ctx.Err()
		}})
		inv := toolOf(t, r)
		if !inv.IsError || !strings.Contains(inv.Output, "did not answer within 200ms") || !strings.Contains(inv.Output, "Permission to use Bash was denied") {
			t.Errorf("invocation = %+v", inv)
		}
		if !hadDeadline.Load() {
			t.Errorf("the asker's context had no deadline")
		}
		if len(r.PermissionDenials) != 1 {
			t.Errorf("PermissionDenials = %+v", r.PermissionDenials)
		}
	})
	t.Run("asker_fails", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{})
		s := create(t, m, CreateOptions{})
		inv := toolOf(t, query(t, s, prompt, QueryOptions{AskPermission: func(context.Context, *turn.PermissionRequest) (*claudeagent.PermissionResult, error) {
			return nil, errors.New("boom")
		}}))
		if !inv.IsError || !strings.Contains(inv.Output, "asking the caller failed (boom)") {
			t.Errorf("invocation = %+v", inv)
		}
	})
	t.Run("allow_without_input", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{})
		s := create(t, m, CreateOptions{})
		var got json.RawMessage
		r := query(t, s, prompt, QueryOptions{AskPermission: func(_ context.Context, req *turn.PermissionRequest) (*claudeagent.PermissionResult, error) {
			got = req.Input
			return &claudeagent.PermissionResult{Behavior: "allow"}, nil
		}})
		var in, want any
		_ = json.Unmarshal(got, &in)
		_ = json.Unmarshal([]byte(toolInput), &want)
		if !reflect.DeepEqual(in, want) {
			t.Errorf("asked with input %s", got)
		}
		// The fake answers an allow without an object updatedInput with a
		// ZodError tool_result, and a changed one with "fake claude ran".
		if inv := toolOf(t, r); inv.IsError || inv.Output != "hi" || r.FinalText != toolSaid || !approx(r.CostUSD, askCost) {
			t.Errorf("result = %+v", r)
		}
	})
	t.Run("allow_with_changed_input", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{})
		s := create(t, m, CreateOptions{})
		r := query(t, s, prompt, QueryOptions{AskPermission: func(context.Context, *turn.PermissionRequest) (*claudeagent.PermissionResult, error) {
			return claudeagent.Allow(json.RawMessage(`{"command":"echo safer"}`)), nil
		}})
		if inv := toolOf(t, r); inv.Output != `fake claude ran updatedInput: {"command":"echo safer"}` {
			t.Errorf("invocation = %+v", inv)
		}
	})
	t.Run("deny_by_asker", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{PermissionPolicy: "allow"})
		s := create(t, m, CreateOptions{})
		p := startQuery(ctxFor(t), s, prompt, QueryOptions{AskPermission: func(context.Context, *turn.PermissionRequest) (*claudeagent.PermissionResult, error) {
			return claudeagent.Deny("Host says no"), nil
		}})
		r := p.wait(t, waitLimit)
		if inv := toolOf(t, r); !inv.IsError || inv.Output != "Host says no" || len(r.PermissionDenials) != 1 {
			t.Errorf("result = %+v", r)
		}
		if ev := p.rec.snapshot(); len(ev) < 4 {
			t.Errorf("events = %+v", ev)
		} else if e := ev[3]; e.Kind != turn.EventPermission || !e.IsError || !strings.Contains(e.Text, "Host says no") {
			t.Errorf("permission event = %+v", e)
		}
	})
}

// TestApprovalWithinCeilings: whoever allows a tool use, it stays within
// the ceilings: a path outside --allowed-roots is denied, and lasting
// permission updates a remote caller may not grant are dropped.
func TestApprovalWithinCeilings(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	m := newManager(t, Config{AllowedRoots: []string{root}, Remote: true, RemoteAllow: []string{"reads-files"}})
	s := create(t, m, CreateOptions{Cwd: root, Owner: "alice"})
	in, _ := json.Marshal(map[string]string{"file_path": outside + "/secret"})
	var rule claudeagent.PermissionUpdate
	if err := json.Unmarshal([]byte(`{"type":"addRules","behavior":"allow","destination":"session","rules":[{"toolName":"Read"}]}`), &rule); err != nil {
		t.Fatal(err)
	}
	res := s.boundApproval(&claudeagent.CanUseToolRequest{ToolName: "Read", Input: in}, root, claudeagent.Allow(in, rule))
	if res.Behavior != "deny" || !strings.Contains(res.Message, "outside the directories this server allows") {
		t.Errorf("an approval of a read outside the roots = %+v", res)
	}
	in, _ = json.Marshal(map[string]string{"file_path": root + "/f"})
	res = s.boundApproval(&claudeagent.CanUseToolRequest{ToolName: "Read", Input: in}, root, claudeagent.Allow(in, rule))
	if res.Behavior != "allow" || len(res.UpdatedPermissions) != 0 {
		t.Errorf("an approval inside the roots with a rule the caller may not grant = %+v", res)
	}
}
