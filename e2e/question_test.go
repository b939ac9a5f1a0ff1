package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/fakeapi"
)

// The model's clarifying questions with the real CLI: the fake API's
// TOOL_ASK has the model call AskUserQuestion with two questions of three
// choices each (one choice; several). What the CLI made of the answer is
// the tool_result of its next API request.

const (
	askDB       = "Which database should the service use?"
	askFeatures = "Which features should ship first?"
)

// askResult returns the tool_result the CLI sent the model for its
// questions.
func askResult(t *testing.T, e *e2e) fakeapi.ToolResult {
	t.Helper()
	for _, r := range e.api.MessageRequests() {
		for _, tr := range r.LastToolResults() {
			return tr
		}
	}
	t.Fatal("the CLI sent no tool_result for the questions")
	return fakeapi.ToolResult{}
}

// formAnswer answers the questions' form with content, counting the forms
// and keeping the last one's schema.
func formAnswer(content map[string]any, asked *atomic.Int32, schema *atomic.Value) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		schema.Store(fmt.Sprint(r.Params.RequestedSchema))
		return &mcp.ElicitResult{Action: "accept", Content: content}, nil
	}
}

// TestE2EQuestionElicitation: the questions reach the client as a form of
// choices and free text; one choice, several, and an answer in one's own
// words reach the model in the CLI's tool_result, and the query's result
// lists them.
func TestE2EQuestionElicitation(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		protocol string
		content  map[string]any
		told     []string // in the tool_result
		listed   map[string]string
	}{
		{"single", "2025-11-25", map[string]any{"q1": "SQLite"},
			[]string{`"` + askDB + `"="SQLite"`}, map[string]string{askDB: "SQLite"}},
		{"single_input_required", "", map[string]any{"q1": "SQLite"}, // the SDK's newest protocol: an input-required result
			[]string{`"` + askDB + `"="SQLite"`}, map[string]string{askDB: "SQLite"}},
		{"multiple", "2025-11-25", map[string]any{"q1": "Postgres", "q2": []any{"Auth", "Billing"}},
			[]string{`"` + askDB + `"="Postgres"`, `"` + askFeatures + `"="Auth, Billing"`}, map[string]string{askDB: "Postgres", askFeatures: "Auth, Billing"}},
		{"free_text", "2025-11-25", map[string]any{"q1_other": "DuckDB, embedded in the binary", "q2": []any{"Search"}, "q2_other": "search must be fast"},
			[]string{`"` + askDB + `"="DuckDB, embedded in the binary"`, `"` + askFeatures + `"="Search"`, "search must be fast"},
			map[string]string{askDB: "DuckDB, embedded in the binary", askFeatures: "Search (search must be fast)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var asked atomic.Int32
			var schema atomic.Value
			e := startE2E(t, e2eOptions{protocol: c.protocol, elicit: formAnswer(c.content, &asked, &schema)})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, out := e.call(t, ctx, "claude_direct_query", map[string]any{"cwd": e.cwd, "prompt": "TOOL_ASK"}, nil)
			if res.IsError {
				t.Fatalf("query: %s", text(res))
			}
			if asked.Load() != 1 {
				t.Errorf("asked %d times", asked.Load())
			}
			if s, _ := schema.Load().(string); !strings.Contains(s, "oneOf") || !strings.Contains(s, "anyOf") || strings.Contains(s, "allow_session") {
				t.Errorf("the form: %s", s)
			}
			tr := askResult(t, e)
			t.Logf("the model was told: %q", tr.Content)
			for _, want := range c.told {
				if tr.IsError || !strings.Contains(tr.Content, want) {
					t.Errorf("the model was told %q (error %v), without %s", tr.Content, tr.IsError, want)
				}
			}
			if strings.Contains(tr.Content, "did not answer") {
				t.Errorf("the CLI says the questions were not answered: %q", tr.Content)
			}
			checkListed(t, out, c.listed)
		})
	}
}

// checkListed checks the query's questions: those in want answered so,
// the rest unanswered.
func checkListed(t *testing.T, out map[string]any, want map[string]string) {
	t.Helper()
	qs, _ := out["questions"].([]any)
	if len(qs) != 2 {
		t.Fatalf("questions = %v", out["questions"])
	}
	for _, q := range qs {
		q := q.(map[string]any)
		a, _ := q["answer"].(string)
		if a != want[q["question"].(string)] || (a == "" && q["unanswered"] == nil) {
			t.Errorf("listed %v, want the answer %q", q, want[q["question"].(string)])
		}
	}
}

// TestE2EQuestionNobody: with nobody to ask (no elicitation, no page) the
// model is told at once to state its assumptions and go on, or, with
// --unanswered-questions=deny, that its questions cannot be answered; a
// client that does not answer in time gets the same; never a word about
// permission modes.
func TestE2EQuestionNobody(t *testing.T) {
	t.Parallel()
	hang := func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	for _, c := range []struct {
		name   string
		args   []string
		elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
		want   []string
	}{
		{"assume", nil, nil, []string{"Nobody can answer your questions now", "state these assumptions"}},
		{"deny", []string{"--unanswered-questions", "deny"}, nil, []string{"Your questions cannot be answered"}},
		{"timeout", []string{"--permission-timeout", "1s"}, hang, []string{"did not answer within 1s", "state these assumptions"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := startE2E(t, e2eOptions{protocol: "2025-11-25", args: c.args, elicit: c.elicit})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, out := e.call(t, ctx, "claude_direct_query", map[string]any{"cwd": e.cwd, "prompt": "TOOL_ASK"}, nil)
			if res.IsError {
				t.Fatalf("query: %s", text(res))
			}
			tr := askResult(t, e)
			for _, want := range c.want {
				if !strings.Contains(tr.Content, want) {
					t.Errorf("the model was told %q, without %q", tr.Content, want)
				}
			}
			for _, not := range []string{"acceptEdits", "bypassPermissions", "did not answer the questions"} {
				if strings.Contains(tr.Content, not) {
					t.Errorf("the model was told %q", tr.Content)
				}
			}
			checkListed(t, out, nil)
			md, _ := out["metadata"].(map[string]any)
			if d, _ := md["permissionDenials"].([]any); len(d) != 0 {
				t.Errorf("permissionDenials = %v", d)
			}
		})
	}
}

// TestE2EQuestionModes: the CLI asks its questions in every permission
// mode, bypassPermissions included (the tool requires a person).
func TestE2EQuestionModes(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"default", "acceptEdits", "bypassPermissions", "plan"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var asked atomic.Int32
			var schema atomic.Value
			e := startE2E(t, e2eOptions{protocol: "2025-11-25", elicit: formAnswer(map[string]any{"q1": "MySQL"}, &asked, &schema)})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, _ := e.call(t, ctx, "claude_direct_query", map[string]any{"cwd": e.cwd, "prompt": "TOOL_ASK", "permissionMode": mode}, nil)
			if res.IsError {
				t.Fatalf("query: %s", text(res))
			}
			if tr := askResult(t, e); asked.Load() != 1 || !strings.Contains(tr.Content, `"`+askDB+`"="MySQL"`) {
				t.Errorf("asked %d times; the model was told %q", asked.Load(), tr.Content)
			}
		})
	}
}
