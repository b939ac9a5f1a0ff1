package turn

import (
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
)

// TestQuestionsNotDenials: the model's questions recorded in the turn come
// in its result, and the CLI's own denial of the same tool call (a
// question nobody answered) is not listed again as a permission denial;
// another tool's denial is.
func TestQuestionsNotDenials(t *testing.T) {
	t.Parallel()
	tr := New(nil, nil)
	tr.AddQuestion(QuestionAsked{ToolUseID: "toolu_ask", Question: "Which?", Unanswered: "Nobody can answer"})
	m, err := claudeagent.DecodeMessage([]byte(`{"type":"result","subtype":"success","result":"done","permission_denials":[` +
		`{"tool_name":"AskUserQuestion","tool_use_id":"toolu_ask","tool_input":{}},{"tool_name":"Bash","tool_use_id":"toolu_bash","tool_input":{}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Handle(m) {
		t.Fatal("the result did not end the turn")
	}
	r := tr.Snapshot(0, WithoutThinking)
	if len(r.Questions) != 1 || r.Questions[0].Question != "Which?" {
		t.Errorf("Questions = %+v", r.Questions)
	}
	if len(r.PermissionDenials) != 1 || r.PermissionDenials[0].ToolName != "Bash" {
		t.Errorf("PermissionDenials = %+v", r.PermissionDenials)
	}
}
