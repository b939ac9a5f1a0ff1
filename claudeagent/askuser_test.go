package claudeagent

import (
	"encoding/json"
	"strings"
	"testing"
)

const askInput = `{"questions":[{"question":"Which database?","header":"DB","options":[{"label":"Postgres"},{"label":"SQLite"}],"multiSelect":false},` +
	`{"question":"Which features?","options":[{"label":"Auth"},{"label":"Search"},{"label":"Billing"}],"multiSelect":true}],"metadata":{"source":"x"}}`

// TestAnswerQuestions: the answers go as the CLI reads them, question text
// to the label (several joined by ", ", the CLI's own joining), text of
// one's own as the answer or, beside picks, as a note; the input's other
// fields stay; a pick that is no choice, or two for one, is refused.
func TestAnswerQuestions(t *testing.T) {
	qs, ok := Questions(AskUserQuestionTool, json.RawMessage(askInput))
	if !ok || len(qs) != 2 || !qs[1].MultiSelect || qs[0].Options[1].Label != "SQLite" {
		t.Fatalf("Questions = %+v %v", qs, ok)
	}
	if _, ok := Questions("Bash", json.RawMessage(askInput)); ok {
		t.Error("another tool's input read as questions")
	}
	res, err := AnswerQuestions(json.RawMessage(askInput), qs, []Reply{{Other: "  DuckDB "}, {Picks: []string{"Auth", "Billing"}, Other: "billing later"}})
	if err != nil {
		t.Fatal(err)
	}
	var in map[string]any
	_ = json.Unmarshal(res.UpdatedInput, &in)
	if res.Behavior != "allow" || in["metadata"] == nil || in["questions"] == nil {
		t.Fatalf("the allow lost the input: %s", res.UpdatedInput)
	}
	answers, _ := json.Marshal(in["answers"])
	notes, _ := json.Marshal(in["annotations"])
	if string(answers) != `{"Which database?":"DuckDB","Which features?":"Auth, Billing"}` || string(notes) != `{"Which features?":{"notes":"billing later"}}` {
		t.Errorf("answers %s, annotations %s", answers, notes)
	}
	if got := GivenAnswers(res); got["Which features?"] != "Auth, Billing (billing later)" || got["Which database?"] != "DuckDB" {
		t.Errorf("GivenAnswers = %v", got)
	}
	for _, bad := range []struct {
		replies []Reply
		want    string
	}{
		{[]Reply{{Picks: []string{"Oracle"}}}, `"Oracle" is not a choice of question "Which database?"`},
		{[]Reply{{Picks: []string{"Postgres", "SQLite"}}}, "takes one choice, got 2"},
	} {
		if _, err := AnswerQuestions(json.RawMessage(askInput), qs, bad.replies); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want %q", bad.replies, err, bad.want)
		}
	}
	if GivenAnswers(Deny("no")) != nil || GivenAnswers(Allow(json.RawMessage(askInput))) != nil {
		t.Error("answers read from a deny or a bare allow")
	}
}
