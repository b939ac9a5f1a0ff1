package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/audit"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/resulttext"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// auditLines decodes an audit log.
func auditLines(t testing.TB, log string) []audit.Entry {
	t.Helper()
	var out []audit.Entry
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		if l == "" {
			continue
		}
		var e audit.Entry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}

// TestAuditUnknownTool: with the audit log on, a call of a tool that does
// not exist (or of the empty name) is an error for that call, audited, and
// the server goes on (defect: a typed-nil result panicked the server).
func TestAuditUnknownTool(t *testing.T) {
	var buf testkit.Buffer
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{Audit: audit.New(&buf, "audit.log", audit.Options{})})
	for _, name := range []string{"claude_nope", "", "claude_session_list\x00"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		cancel()
		if err == nil && !res.IsError {
			t.Errorf("calling %q succeeded", name)
		}
	}
	if res, _ := f.call(t, "claude_session_list", map[string]any{}, nil); res.IsError {
		t.Fatalf("the server does not answer after unknown tools: %s", resText(res))
	}
	var outcomes []string
	for _, e := range auditLines(t, buf.String()) {
		outcomes = append(outcomes, e.Tool+":"+e.Outcome)
	}
	want := "claude_nope:started claude_nope:rpc_error :started :rpc_error"
	if got := strings.Join(outcomes, " "); !strings.HasPrefix(got, want) {
		t.Errorf("audit outcomes %q, want them to start with %q", got, want)
	}
}

// failingWriter fails every write while broken, as a full disk does.
type failingWriter struct {
	mu     sync.Mutex
	broken bool
	buf    bytes.Buffer
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken {
		return 0, errors.New("no space left on device")
	}
	return w.buf.Write(p)
}

func (w *failingWriter) set(broken bool) {
	w.mu.Lock()
	w.broken = broken
	w.mu.Unlock()
}

// TestAuditFailsClosed: a call whose audit line cannot be written is
// refused, naming the audit log, without running, and logged at ERROR;
// once the log can be written again calls run again (defect: 150 calls
// were served with 35 lines written).
func TestAuditFailsClosed(t *testing.T) {
	w := &failingWriter{}
	var logs testkit.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{Audit: audit.New(w, "/var/log/agents.audit", audit.Options{Log: logger})})
	w.set(true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: "claude_session_create", Arguments: map[string]any{"cwd": t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "--audit-log /var/log/agents.audit") || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("a create with the audit log failing = %v, want refused naming the audit log", err)
	}
	if n := len(f.mgr.List()); n != 0 {
		t.Errorf("the refused create made %d session(s)", n)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "/var/log/agents.audit") {
		t.Errorf("the failure was not logged at ERROR:\n%s", logs.String())
	}
	w.set(false)
	if res, _ := f.call(t, "claude_session_create", map[string]any{"cwd": t.TempDir()}, nil); res.IsError {
		t.Fatalf("create once the log can be written: %s", resText(res))
	}
	got := auditLines(t, w.buf.String())
	if len(got) != 2 || got[0].Outcome != "started" || got[1].Outcome != "ok" {
		t.Errorf("audit lines %+v, want started and ok of the one create that ran", got)
	}
}

// TestAuditCancelledAndRedacted: a call the client cancels is audited as
// cancelled; an error text that quotes the arguments keeps them out.
func TestAuditCancelledAndRedacted(t *testing.T) {
	var buf testkit.Buffer
	f := newFakeServer(t, "2025-11-25", sessions.Config{}, Options{Audit: audit.New(&buf, "audit.log", audit.Options{})})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = f.cs.CallTool(ctx, &mcp.CallToolParams{Name: "claude_direct_query", Arguments: map[string]any{"prompt": "SLOW5", "cwd": t.TempDir()}})
	}()
	testkit.Until(t, 10*time.Second, "the query's process", func() bool { return f.mgr.LiveCount() > 0 })
	cancel()
	<-done
	testkit.Until(t, 10*time.Second, "the cancelled call's audit line", func() bool { return strings.Contains(buf.String(), `"outcome":"cancelled"`) })

	secret := "the secret plan for the merger"
	long := secret + strings.Repeat(", and more of the secret plan", 4) // over what an argument error quotes
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"claude_direct_query", map[string]any{"prompt": secret, "waitSeconds": "soon", "systemPrompt": secret + " too"}},
		{"claude_direct_query", map[string]any{"prompt": map[string]any{"text": secret}}},            // an object where a string goes
		{"claude_direct_query", map[string]any{"prompt": secret, "mcpServers": "secret plan again"}}, // a string where an object goes
		{"claude_direct_query", map[string]any{"prompt": secret, "permissionMode": secret}},
		{"claude_direct_query", map[string]any{"prompt": secret, "tools": long, "maxTurns": long}}, // quoted by toolargs.Check, cut
		{"claude_direct_query", map[string]any{"prompt": secret, "maxTurns": `a secret\ "quote`}},
		{"claude_session_create", map[string]any{"permissionMode": long, "effort": "secret"}}, // an enumeration's value
	} {
		ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := f.cs.CallTool(ctx2, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		cancel2()
		if err == nil && !res.IsError {
			t.Errorf("%v was accepted", c.args)
		}
	}
	if strings.Contains(buf.String(), "secret plan") || strings.Contains(buf.String(), "secret") {
		t.Errorf("the audit log holds the prompt:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), `"tool":"claude_direct_query","promptBytes":30`) {
		t.Errorf("the invalid call is not audited:\n%s", buf.String())
	}
}

// FuzzAuditedCalls: any tool name and arguments, with the audit log on,
// get an answer and two audit lines; the server never dies.
func FuzzAuditedCalls(f *testing.F) {
	for _, seed := range []struct{ name, args string }{
		{"", `{}`}, {"claude_nope", `{}`}, {"claude_session_list", `{}`}, {"claude_chat_query", `{"sessionId":"x","prompt":"hi"}`},
		{"claude_direct_query", `{"prompt":5}`}, {"tasks/get", `null`}, {"claude_session_history", `[]`}, {"\u0000", `"x"`},
	} {
		f.Add(seed.name, seed.args)
	}
	var buf testkit.Buffer
	srv := NewServer(sessions.NewManager(sessions.Config{CLIPath: filepath.Join(f.TempDir(), "no-claude")}), Options{Version: "fuzz", Audit: audit.New(&buf, "audit.log", audit.Options{})})
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
	f.Fuzz(func(t *testing.T, name, args string) {
		var v any
		if json.Unmarshal([]byte(args), &v) != nil {
			v = args
		}
		before := strings.Count(buf.String(), "\n")
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: v})
		if cctx.Err() != nil {
			t.Fatalf("%q(%s) was not answered in 10 s", name, args)
		}
		if err == nil && res == nil {
			t.Fatalf("%q(%s): no result and no error", name, args)
		}
		if err != nil && strings.Contains(err.Error(), "connection closed") {
			t.Fatalf("%q(%s) closed the connection: %v", name, args, err)
		}
		if n := strings.Count(buf.String(), "\n") - before; n != 2 && err == nil {
			t.Errorf("%q(%s): %d audit lines, want 2", name, args, n)
		}
	})
}

// TestTaskResultsBoundedPerUser: one user's many finished tasks never
// evict another user's result (defect: one bound of 256 for all users).
func TestTaskResultsBoundedPerUser(t *testing.T) {
	ts := newTaskStore(time.Hour)
	now := time.Now()
	finished := func(id, owner string, at time.Time) *task {
		return &task{id: id, owner: owner, scope: owner, created: at, updated: at, finished: at, ttl: time.Hour, status: taskCompleted}
	}
	ts.add(finished("bobs", "bob", now.Add(-time.Minute)))
	for i := range maxFinishedTasks + 40 {
		ts.add(finished(fmt.Sprintf("alice-%d", i), "alice", now.Add(time.Duration(i)*time.Millisecond)))
	}
	ts.add(finished("alice-last", "alice", now.Add(time.Hour/2)))
	if ts.get("bobs", "bob") == nil {
		t.Error("alice's tasks evicted bob's result")
	}
	n := 0
	for _, tk := range ts.tasks {
		if tk.owner == "alice" {
			n++
		}
	}
	if n != maxFinishedTasks {
		t.Errorf("alice has %d finished tasks kept, want %d", n, maxFinishedTasks)
	}
	if ts.get("alice-0", "alice") != nil || ts.get("alice-last", "alice") == nil {
		t.Error("not alice's oldest were dropped")
	}
}

// TestEveryToolClassified: every tool has a policy class, and a registered
// tool without one is refused before it runs.
func TestEveryToolClassified(t *testing.T) {
	h := &handlers{}
	for _, tool := range Tools() {
		if _, ok := h.toolAction(tool.Name); !ok {
			t.Errorf("tool %s has no policy class: add it to toolActions (mcptools/actions.go)", tool.Name)
		}
	}
	h = &handlers{inputs: map[string]*jsonschema.Schema{"claude_session_list": {Type: "object", Properties: map[string]*jsonschema.Schema{"sessionId": {Type: "string"}}}}, actions: map[string]string{}}
	ran := false
	next := func(context.Context, string, mcp.Request) (mcp.Result, error) {
		ran = true
		return &mcp.CallToolResult{}, nil
	}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "claude_session_list", Arguments: json.RawMessage("{}")}}
	res, err := h.callTool(context.Background(), req, next)
	r, _ := res.(*mcp.CallToolResult)
	if ran || err != nil || r == nil || !r.IsError || !strings.Contains(resulttext.OfTool(r), "not classified") {
		t.Errorf("an unclassified tool: ran %v, result %+v, err %v", ran, r, err)
	}
}
