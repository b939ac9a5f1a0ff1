package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools"
	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/dashboard"
)

// TestDashboardQuestions: the model's clarifying questions show on the
// owner's page as a card of choices (radio buttons for one, checkboxes for
// several) and free text; an answer that is no choice is refused and the
// question stays open; the answer reaches the CLI and the result lists
// it; "decline" tells the model to go on with its assumptions.
func TestDashboardQuestions(t *testing.T) {
	// The client's form is answered only once the page has answered
	// (release): a client of 2026-07-28 holds the question until then.
	release := make(chan struct{})
	hang := func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &mcp.ElicitResult{Action: "decline"}, nil // too late
	}
	for _, tc := range []struct {
		name     string
		protocol string
		elicit   func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
		decline  bool
	}{
		{"elicitation", "2025-11-25", hang, false},
		{"no_elicitation", "2025-11-25", nil, false},
		{"input_required", "", hang, false},
		{"decline", "2025-11-25", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newDashEnv(t, tc.protocol, tc.elicit)
			sid := e.create(t, nil)
			c := browser(t)
			e.signIn(t, c)
			page := openSSE(t, c, e.ui+"/events?session="+sid)
			done := e.startQuery(sid, "TOOL_ASK")
			body := ""
			for {
				if len(e.d.Questions(sid)) > 0 {
					_, _, body = get(t, c, e.ui+"/s/"+sid)
					if strings.Contains(body, `name="question"`) {
						break
					}
				}
				page.next(t, "panel")
			}
			for _, want := range []string{`type="radio" name="q1" value="SQLite"`, `type="checkbox" name="q2" value="Billing"`,
				`name="q1_other"`, `name="q2_other"`, "Which database should the service use?", "Full-text search", `value="answer"`} {
				if !strings.Contains(body, want) {
					t.Errorf("the card lacks %s", want)
				}
			}
			if strings.Contains(body, "allow_session") {
				t.Error("the questions are offered as a permission")
			}
			qid := regexp.MustCompile(`name="question" value="([^"]+)"`).FindStringSubmatch(body)[1]
			send := func(form url.Values) (int, string) {
				form.Set("csrf", pageTokenOf(t, body))
				form.Set("question", qid)
				return post(t, c, e.ui+"/s/"+sid+"/answer", form, map[string]string{"Origin": e.url})
			}
			if code, text := send(url.Values{"decision": {dashboard.DecisionAnswer}, "q1": {"SQLite", "MySQL"}}); code != http.StatusBadRequest || !strings.Contains(text, "takes one choice") {
				t.Errorf("two choices for one: %d %s", code, text)
			}
			if len(e.d.Questions(sid)) != 1 {
				t.Fatal("a refused answer closed the question")
			}
			want := map[string]string{"Which database should the service use?": "SQLite", "Which features should ship first?": "Auth, Search (search can wait)"}
			form := url.Values{"decision": {dashboard.DecisionAnswer}, "q1": {"SQLite"}, "q2": {"Auth", "Search"}, "q2_other": {"search can wait"}}
			if tc.decline {
				form = url.Values{"decision": {dashboard.DecisionDeny}}
			}
			if code, text := send(form); code != http.StatusSeeOther {
				t.Fatalf("answer: %d %s", code, text)
			}
			if tc.protocol == "" {
				close(release)
			}
			res := <-done
			var out mcptools.QueryOutput
			b, _ := json.Marshal(res.StructuredContent)
			_ = json.Unmarshal(b, &out)
			if res.IsError || len(out.Questions) != 2 || len(out.Metadata.PermissionDenials) != 0 {
				t.Fatalf("the query after the page answered: %s %+v", mcptest.Text(res), out)
			}
			for _, q := range out.Questions {
				switch {
				case tc.decline && (q.Answer != "" || !strings.Contains(q.Unanswered, "The user declined to answer your questions")):
					t.Errorf("declined, listed as %+v", q)
				case !tc.decline && q.Answer != want[q.Question]:
					t.Errorf("listed %+v, want the answer %q", q, want[q.Question])
				}
			}
			out1 := out.ToolInvocations[0].Output
			if !tc.decline && (!strings.Contains(out1, `"answers":{"Which database should the service use?":"SQLite","Which features should ship first?":"Auth, Search"}`) ||
				!strings.Contains(out1, `"annotations":{"Which features should ship first?":{"notes":"search can wait"}}`)) {
				t.Errorf("the CLI got %s", out1)
			}
		})
	}
}
