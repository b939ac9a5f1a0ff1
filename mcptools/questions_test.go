package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

const (
	askDB       = "Which database should the service use?"
	askFeatures = "Which features should ship first?"
)

// ranAnswers returns the answers the CLI got: the fake CLI reports an
// allow whose input it did not record as its tool's output,
// "fake claude ran updatedInput: <json>".
func ranAnswers(t *testing.T, out map[string]any) map[string]string {
	t.Helper()
	inv, _ := out["toolInvocations"].([]any)
	if len(inv) != 1 {
		t.Fatalf("toolInvocations = %v", out["toolInvocations"])
	}
	got, _ := inv[0].(map[string]any)["output"].(string)
	raw, ok := strings.CutPrefix(got, "fake claude ran updatedInput: ")
	if !ok {
		t.Fatalf("the CLI got no answers: tool output %q", got)
	}
	var in struct {
		Questions []any             `json:"questions"`
		Answers   map[string]string `json:"answers"`
	}
	if err := json.Unmarshal([]byte(raw), &in); err != nil || len(in.Questions) != 2 {
		t.Fatalf("updatedInput %s: %v (the questions must stay)", raw, err)
	}
	return in.Answers
}

// listed returns the query's questions, by question text.
func listed(t *testing.T, out map[string]any) map[string]map[string]any {
	t.Helper()
	qs, _ := out["questions"].([]any)
	if len(qs) != 2 {
		t.Fatalf("questions = %v", out["questions"])
	}
	m := map[string]map[string]any{}
	for _, q := range qs {
		q := q.(map[string]any)
		m[q["question"].(string)] = q
	}
	return m
}

// TestQuestionsElicitation: the model's clarifying questions reach a client
// as a form of choices (one, several) and free text, on both eras; the
// answers reach the CLI as it reads them (question text -> labels joined
// by ", ") and the result lists them, with no permission denial.
func TestQuestionsElicitation(t *testing.T) {
	cases := []struct {
		name    string
		content map[string]any
		want    map[string]string
	}{
		{"single", map[string]any{"q1": "SQLite"}, map[string]string{askDB: "SQLite"}},
		{"multiple", map[string]any{"q1": "Postgres", "q2": []any{"Auth", "Billing"}}, map[string]string{askDB: "Postgres", askFeatures: "Auth, Billing"}},
		{"free_text", map[string]any{"q1_other": "DuckDB, embedded", "q2": []any{"Search"}}, map[string]string{askDB: "DuckDB, embedded", askFeatures: "Search"}},
	}
	for _, proto := range []string{"2025-11-25", ""} {
		for _, c := range cases {
			t.Run("protocol="+proto+"/"+c.name, func(t *testing.T) {
				var schema, message string
				f := newFakeServerWith(t, proto, sessions.Config{}, Options{},
					func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						b, _ := json.Marshal(r.Params.RequestedSchema)
						schema, message = string(b), r.Params.Message
						return &mcp.ElicitResult{Action: "accept", Content: c.content}, nil
					})
				res, out := f.call(t, "claude_direct_query", map[string]any{"cwd": t.TempDir(), "prompt": "TOOL_ASK"}, nil)
				if res.IsError {
					t.Fatalf("query: %s", resText(res))
				}
				for _, want := range []string{`"oneOf"`, `"anyOf"`, `"type":"array"`, `"const":"SQLite"`, `"q1_other"`, `"q2_other"`} {
					if !strings.Contains(schema, want) {
						t.Errorf("form lacks %s: %s", want, schema)
					}
				}
				if strings.Contains(schema, "allow_session") || !strings.Contains(message, askDB) || !strings.Contains(message, "Full-text search") {
					t.Errorf("asked as a permission, or without its questions: %q %s", message, schema)
				}
				if got := ranAnswers(t, out); fmt.Sprint(got) != fmt.Sprint(c.want) {
					t.Errorf("answers = %v, want %v", got, c.want)
				}
				qs := listed(t, out)
				for q, a := range c.want {
					if qs[q]["answer"] != a {
						t.Errorf("listed %q: %v, want %q", q, qs[q], a)
					}
					if !strings.Contains(resText(res), q+" Answered: "+a) {
						t.Errorf("the text does not say %q was answered %q: %s", q, a, resText(res))
					}
				}
				if len(c.want) == 1 && qs[askFeatures]["unanswered"] == nil {
					t.Errorf("a question left open is not listed so: %v", qs[askFeatures])
				}
				md := out["metadata"].(map[string]any)
				if d, _ := md["permissionDenials"].([]any); len(d) != 0 {
					t.Errorf("permissionDenials = %v", d)
				}
			})
		}
	}
}

// TestQuestionsRefused: an answer that is no choice, a declined form, a
// client that cannot be asked and one that does not answer in time: each
// gets the model a refusal that says how to go on (never another
// permission mode), and the result says the questions were not answered.
func TestQuestionsRefused(t *testing.T) {
	hang := func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	answer := func(res *mcp.ElicitResult) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return res, nil }
	}
	cases := []struct {
		name   string
		cfg    sessions.Config
		elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
		want   []string
	}{
		{"not_a_choice", sessions.Config{}, answer(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"q1": "Oracle"}}),
			[]string{"does not match requested schema", "state these assumptions"}}, // the SDK checks the form's answer

		{"two_for_one", sessions.Config{}, answer(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"q1": []any{"Postgres", "SQLite"}}}),
			[]string{"does not match requested schema", "state these assumptions"}},
		{"empty", sessions.Config{}, answer(&mcp.ElicitResult{Action: "accept", Content: map[string]any{}}),
			[]string{"held none", "state these assumptions"}},
		{"declined", sessions.Config{}, answer(&mcp.ElicitResult{Action: "decline"}),
			[]string{"The user declined to answer your questions", "state these assumptions"}},
		{"nobody", sessions.Config{}, nil,
			[]string{"Nobody can answer your questions now", "did not declare elicitation", "state these assumptions"}},
		{"nobody_policy_allow", sessions.Config{PermissionPolicy: "allow"}, nil, // a bare allow would leave the model "not answered"
			[]string{"Nobody can answer your questions now", "state these assumptions"}},
		{"nobody_deny", sessions.Config{UnansweredQuestions: sessions.UnansweredDeny}, nil,
			[]string{"Your questions cannot be answered", "did not declare elicitation"}},
		{"timeout", sessions.Config{PermissionTimeout: 300 * time.Millisecond}, hang,
			[]string{"did not answer within 300ms", "state these assumptions"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeServerWith(t, "2025-11-25", c.cfg, Options{}, c.elicit)
			res, out := f.call(t, "claude_direct_query", map[string]any{"cwd": t.TempDir(), "prompt": "TOOL_ASK"}, nil)
			if res.IsError {
				t.Fatalf("query: %s", resText(res))
			}
			inv, _ := out["toolInvocations"].([]any)
			if len(inv) != 1 {
				t.Fatalf("toolInvocations = %v", out["toolInvocations"])
			}
			told, _ := inv[0].(map[string]any)["output"].(string)
			if told == "" {
				told, _ = inv[0].(map[string]any)["error"].(string)
			}
			for _, want := range c.want {
				if !strings.Contains(told, want) {
					t.Errorf("the model was told %q, without %q", told, want)
				}
			}
			for _, not := range []string{"acceptEdits", "bypassPermissions", "allowedTools"} {
				if strings.Contains(told, not) {
					t.Errorf("the refusal advises %s: %q", not, told)
				}
			}
			for q, l := range listed(t, out) {
				if l["answer"] != nil || l["unanswered"] != told {
					t.Errorf("%q listed as %v, want unanswered with what the model was told", q, l)
				}
			}
			if !strings.Contains(resText(res), "Not answered; Claude Code was told: ") {
				t.Errorf("the text does not say the questions went unanswered: %s", resText(res))
			}
			md := out["metadata"].(map[string]any)
			if d, _ := md["permissionDenials"].([]any); len(d) != 0 {
				t.Errorf("permissionDenials = %v", d)
			}
		})
	}
}

// TestTaskQuestions: the model's questions inside a task are its
// input_required, with the questions' form; tasks/update answers them.
func TestTaskQuestions(t *testing.T) {
	t.Parallel()
	c := newRawClient(t, "2026-07-28", tasksCaps, sessions.Config{}, taskOpts)
	a := c.taskAsking("TOOL_ASK")
	id, key, req, st, sid := a.id, a.key, a.req, a.status, a.sid
	params, _ := req["params"].(map[string]any)
	if !strings.Contains(fmt.Sprint(params["message"]), askDB) || !strings.Contains(fmt.Sprint(params["requestedSchema"]), "q2_other") {
		t.Fatalf("input request = %v", req)
	}
	if msg, _ := st["statusMessage"].(string); msg != "Waiting for an answer: "+askDB {
		t.Errorf("statusMessage = %q", msg)
	}
	if list := c.tool("claude_session_list", map[string]any{"sessionId": sid}); !strings.Contains(fmt.Sprint(list["content"]), "waiting for an answer to its question ("+askDB) {
		t.Errorf("claude_session_list does not say the session waits for an answer: %v", list["content"])
	}
	// A choice the form did not offer leaves the question open.
	bad := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"q1": "Oracle"}}}
	c.result(c.call("tasks/update", map[string]any{"taskId": id, "inputResponses": bad}))
	if st := c.pollTask(id, taskInputRequired); len(st["inputRequests"].(map[string]any)) != 1 {
		t.Fatalf("an answer that is no choice closed the question: %v", st)
	}
	reply := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"q1": "MySQL", "q2": []any{"Auth", "Search"}, "q2_other": "search later if slow"}}}
	c.result(c.call("tasks/update", map[string]any{"taskId": id, "inputResponses": reply}))
	st = c.pollTask(id, taskCompleted)
	sc := structured(st["result"].(map[string]any))
	got := ranAnswers(t, sc)
	if got[askDB] != "MySQL" || got[askFeatures] != "Auth, Search" {
		t.Errorf("answers = %v", got)
	}
	if l := listed(t, sc); l[askFeatures]["answer"] != "Auth, Search (search later if slow)" {
		t.Errorf("listed = %v", l)
	}
}
