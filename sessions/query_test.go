package sessions

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/turn"
)

// ---------------------------------------------------------------------------
// Create, Info, Query

func TestCreateInfoQuery(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{})
	cwd := t.TempDir()
	s := create(t, m, CreateOptions{Cwd: cwd})
	in := s.Info()
	if in.State != state.Idle {
		t.Errorf("State = %q, want idle", in.State)
	}
	checkAlive(t, in.PID)
	if in.Model != defaultModel {
		t.Errorf("Model = %q, want %q (the initialize models' default)", in.Model, defaultModel)
	}
	if in.Cwd != cwd || in.PermissionMode != "default" || in.Queries != 0 || in.SessionID != s.ID {
		t.Errorf("Info = %+v", in)
	}
	if uuid.Validate(in.ClaudeSessionID) != nil || uuid.Validate(s.ID) != nil || in.ClaudeSessionID == s.ID {
		t.Errorf("ids: session %q, claude session %q", s.ID, in.ClaudeSessionID)
	}
	if got, err := m.Get(s.ID); err != nil || got != s {
		t.Errorf("Get = %p, %v", got, err)
	}

	var pr probe
	r := query(t, s, "hi", QueryOptions{OnEvent: pr.onEvent(s)})
	pr.checkArg(t, "--session-id="+in.ClaudeSessionID, true)
	if pr.pid != in.PID {
		t.Errorf("the query ran in pid %d, want %d", pr.pid, in.PID)
	}
	if r.FinalText != hello {
		t.Errorf("FinalText = %q, want %q (once)", r.FinalText, hello)
	}
	if r.ClaudeSessionID != in.ClaudeSessionID {
		t.Errorf("ClaudeSessionID = %q, want %q", r.ClaudeSessionID, in.ClaudeSessionID)
	}
	if want := (turn.Usage{InputTokens: 10, OutputTokens: 9}); r.Usage != want {
		t.Errorf("turn.Usage = %+v, want %+v", r.Usage, want)
	}
	if r.NumTurns != 1 || !approx(r.CostUSD, plainCost) || r.IsError || r.Subtype != "success" ||
		r.StopReason != "end_turn" || r.Model != defaultModel || r.DurationMs != 136 || r.DurationAPIMs != 84 ||
		r.Interrupted || r.TimedOut || r.ErrorText != "" || len(r.ToolInvocations) != 0 {
		t.Errorf("result = %+v", r)
	}
	in2 := s.Info()
	if in2.State != state.Idle || in2.PID != in.PID || in2.Queries != 1 || in2.Usage != r.Usage ||
		!approx(in2.CostUSD, plainCost) || !in2.LastUsed.After(in.LastUsed) {
		t.Errorf("Info after the query = %+v", in2)
	}
	for _, p := range []string{"", " \n\t"} { // the rule of ValidatePrompt: blank is empty
		if _, err := s.Query(ctxFor(t), p, QueryOptions{}); !errors.Is(err, ErrEmptyPrompt) {
			t.Errorf("prompt %q: %v, want ErrEmptyPrompt", p, err)
		}
	}
}

func TestCreateModels(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{})
	for _, tc := range []struct{ model, want string }{
		{"sonnet", "claude-sonnet-5"},
		{"haiku", "claude-haiku-4-5-20251001"},
		{"claude-made-up-1", "claude-made-up-1"}, // unknown ids stay as given
	} {
		s := create(t, m, CreateOptions{SessionOptions: claudeagent.SessionOptions{Model: tc.model}})
		if got := s.Info().Model; got != tc.want {
			t.Errorf("model %q: Info().Model = %q, want %q", tc.model, got, tc.want)
		}
		r := query(t, s, "hi", QueryOptions{})
		if r.Model != tc.want {
			t.Errorf("model %q: result Model = %q, want %q", tc.model, r.Model, tc.want)
		}
		// Switching resolves through the same list.
		got, err := s.SetModel(ctxFor(t), "haiku")
		if err != nil || got != "claude-haiku-4-5-20251001" {
			t.Errorf("SetModel(haiku) = %q, %v", got, err)
		}
		if _, err := s.SetModel(ctxFor(t), "no spaces"); err == nil {
			t.Errorf("SetModel accepted an invalid model")
		}
		if _, err := m.Close(s.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Create(ctxFor(t), CreateOptions{SessionOptions: claudeagent.SessionOptions{Model: "bad model"}, Cwd: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "invalid model") {
		t.Errorf("Create with a bad model: %v", err)
	}
}

// The CLI reports a running total per process; each result carries its
// own turn's cost and Info the sum, also across a process restart.
func TestPerTurnCost(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{MaxLive: 1})
	s := create(t, m, CreateOptions{})
	var sum float64
	for i, tc := range []struct {
		prompt string
		want   float64
	}{{"hi", plainCost}, {"THINK", thinkCost}, {"hi", plainCost}, {"ERR400", 0}, {"THINK", thinkCost}} {
		if i == 3 {
			// A new process starts its total from zero.
			pid := s.Info().PID
			create(t, m, CreateOptions{}) // MaxLive 1: s goes dormant
			if st := s.Info().State; st != state.Dormant {
				t.Fatalf("state = %q, want dormant", st)
			}
			checkGone(t, pid)
		}
		r := query(t, s, tc.prompt, QueryOptions{})
		if !approx(r.CostUSD, tc.want) {
			t.Errorf("turn %d (%s): CostUSD = %v, want %v", i, tc.prompt, r.CostUSD, tc.want)
		}
		sum += tc.want
		if got := s.Info().CostUSD; !approx(got, sum) {
			t.Errorf("after turn %d: Info().CostUSD = %v, want %v", i, got, sum)
		}
	}
}

// ---------------------------------------------------------------------------
// Tools, thinking, events

func TestToolTurn(t *testing.T) {
	t.Parallel()
	t.Run("allowed", func(t *testing.T) {
		t.Parallel()
		// bypassPermissions runs the tool without a can_use_tool question.
		m := newManager(t, Config{}, "IS_SANDBOX", "1")
		s := create(t, m, CreateOptions{SessionOptions: claudeagent.SessionOptions{PermissionMode: "bypassPermissions"}})
		p := startQuery(ctxFor(t), s, "TOOL_BASH[echo hi]", QueryOptions{})
		r := p.wait(t, waitLimit)
		want := []turn.ToolInvocation{{ID: "toolu_fake_1", Name: "Bash", Input: json.RawMessage(`{"command":"echo hi","description":"Run a command"}`), Output: "hi", Done: true}}
		if !reflect.DeepEqual(r.ToolInvocations, want) {
			t.Errorf("ToolInvocations = %+v\nwant %+v", r.ToolInvocations, want)
		}
		if r.FinalText != toolSaid || r.IsError || r.NumTurns != 2 || !approx(r.CostUSD, bypassCost) || len(r.PermissionDenials) != 0 {
			t.Errorf("result = %+v", r)
		}
		wantKinds := []turn.EventKind{turn.EventTurnStarted, turn.EventText, turn.EventToolStarted, turn.EventToolFinished, turn.EventText, turn.EventDone}
		if got := p.rec.kinds(); !slices.Equal(got, wantKinds) {
			t.Errorf("events = %v\nwant %v", got, wantKinds)
		}
		ev := p.rec.snapshot()
		if len(ev) != len(wantKinds) {
			t.FailNow()
		}
		if ev[2].Tool != "Bash" || ev[2].ToolID != "toolu_fake_1" || ev[2].Text != "$ echo hi" ||
			ev[3].Tool != "Bash" || ev[3].ToolID != "toolu_fake_1" || ev[3].IsError || ev[3].Text != "hi" || ev[3].ToolsUsed != 1 ||
			ev[1].Text != "Running a command." || ev[4].Text != toolSaid || ev[5].IsError {
			t.Errorf("events = %+v", ev)
		}
		if _, err := m.Close(s.ID); err != nil {
			t.Fatal(err)
		}
		p.rec.checkNoLate(t)
	})
	t.Run("denied", func(t *testing.T) {
		t.Parallel()
		m := newManager(t, Config{})
		s := create(t, m, CreateOptions{})
		p := startQuery(ctxFor(t), s, "TOOL_BASH[touch made_by_tool.txt && echo hi]", QueryOptions{})
		r := p.wait(t, waitLimit)
		if len(r.ToolInvocations) != 1 {
			t.Fatalf("ToolInvocations = %+v", r.ToolInvocations)
		}
		inv := r.ToolInvocations[0]
		if inv.ID != "toolu_fake_1" || inv.Name != "Bash" || !inv.IsError || inv.Error != inv.Output ||
			!strings.Contains(inv.Output, "Permission to use Bash was denied") {
			t.Errorf("invocation = %+v", inv)
		}
		var in map[string]any
		if err := json.Unmarshal(inv.Input, &in); err != nil || in["command"] != "touch made_by_tool.txt && echo hi" {
			t.Errorf("input = %s", inv.Input)
		}
		if len(r.PermissionDenials) != 1 || r.PermissionDenials[0].ToolName != "Bash" || r.PermissionDenials[0].ToolUseID != "toolu_fake_1" {
			t.Errorf("PermissionDenials = %+v", r.PermissionDenials)
		}
		wantKinds := []turn.EventKind{turn.EventTurnStarted, turn.EventText, turn.EventToolStarted, turn.EventPermission, turn.EventToolFinished, turn.EventText, turn.EventDone}
		if got := p.rec.kinds(); !slices.Equal(got, wantKinds) {
			t.Errorf("events = %v\nwant %v", got, wantKinds)
		}
		ev := p.rec.snapshot()
		if len(ev) != len(wantKinds) {
			t.FailNow()
		}
		if e := ev[3]; !e.IsError || e.Tool != "Bash" || !strings.HasPrefix(e.Text, "denied Bash ($ touch made_by_tool.txt && echo hi)") {
			t.Errorf("permission event = %+v", e)
		}
		if e := ev[4]; !e.IsError {
			t.Errorf("tool_finished event = %+v", e)
		}
		if _, err := m.Close(s.ID); err != nil {
			t.Fatal(err)
		}
		p.rec.checkNoLate(t)
	})
}

func TestThinking(t *testing.T) {
	t.Parallel()
	m := newManager(t, Config{})
	s := create(t, m, CreateOptions{})
	for _, include := range []bool{false, true} {
		p := startQuery(ctxFor(t), s, "THINK", QueryOptions{IncludeThinking: include})
		r := p.wait(t, waitLimit)
		if r.FinalText != hello {
			t.Errorf("FinalText = %q", r.FinalText)
		}
		if include && !slices.Equal(r.Thinking, []string{"Let me think about this."}) {
			t.Errorf("IncludeThinking: Thinking = %q", r.Thinking)
		}
		if !include && len(r.Thinking) != 0 {
			t.Errorf("without IncludeThinking: Thinking = %q", r.Thinking)
		}
		want := []turn.EventKind{turn.EventTurnStarted, turn.EventThinking, turn.EventText, turn.EventDone}
		if got := p.rec.kinds(); !slices.Equal(got, want) {
			t.Errorf("events = %v, want %v", got, want)
		}
	}
}
