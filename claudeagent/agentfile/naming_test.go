package agentfile

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestToolName(t *testing.T) {
	for _, tc := range []struct {
		prefix, name, want string
	}{
		{"", "code-reviewer", "code-reviewer"},
		{"", "Code_Reviewer2", "Code_Reviewer2"},
		{"", "code reviewer", "code_reviewer"},
		{"", "code.reviewer", "code_reviewer"}, // the go-sdk takes '.', the API does not
		{"", "a .. b", "a_b"},                  // a run is one '_'
		{"", "über", "_ber"},                   // non-ASCII letters too
		{"", "日本語", "agent"},                   // nothing left
		{"", "--", "agent"},                    // nothing but separators
		{"agent_", "review", "agent_review"},   // a prefix
		{"agent_", "日本", "agent_agent"},        // a prefix and nothing left
		{"", strings.Repeat("x", 70), strings.Repeat("x", 64)},
		{"p-", strings.Repeat("é", 40), "p-agent"},
		{"", "é" + strings.Repeat("x", 70), "_" + strings.Repeat("x", 63)},
	} {
		got := ToolName(tc.prefix, tc.name)
		if got != tc.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tc.prefix, tc.name, got, tc.want)
		}
		if !ValidToolName(got) {
			t.Errorf("ToolName(%q, %q) = %q: not valid", tc.prefix, tc.name, got)
		}
	}
}

func TestValidToolName(t *testing.T) {
	for name, want := range map[string]bool{
		"a": true, "A-b_9": true, strings.Repeat("x", 64): true,
		"": false, strings.Repeat("x", 65): false, "a.b": false, "a b": false, "é": false,
	} {
		if got := ValidToolName(name); got != want {
			t.Errorf("ValidToolName(%q) = %v", name, got)
		}
	}
}

func TestAssignToolNames(t *testing.T) {
	agent := func(name string, src Source) *Agent {
		return &Agent{Name: name, Source: src, Path: name + ".md", Line: 1}
	}
	for _, tc := range []struct {
		name     string
		agents   []*Agent
		prefix   string
		reserved []string
		want     map[string]string // agent name → tool name
		warns    []string          // substrings, in order
	}{
		{
			name:   "valid names are kept",
			agents: []*Agent{agent("b", SourceUser), agent("a", SourceFile)},
			want:   map[string]string{"a": "a", "b": "b"},
		},
		{
			name:     "a reserved name gets a suffix",
			agents:   []*Agent{agent("claude_chat_query", SourceUser)},
			reserved: []string{"claude_chat_query", "claude_chat_query_2"},
			want:     map[string]string{"claude_chat_query": "claude_chat_query_3"},
			warns:    []string{`agent "claude_chat_query": tool name "claude_chat_query" is taken by the built-in tool "claude_chat_query"; its tool is "claude_chat_query_3"`},
		},
		{
			name:     "reserved names are compared without case",
			agents:   []*Agent{agent("Claude_Chat_Query", SourceUser)},
			reserved: []string{"claude_chat_query"},
			want:     map[string]string{"Claude_Chat_Query": "Claude_Chat_Query_2"},
			warns:    []string{`is taken by the built-in tool "claude_chat_query"`},
		},
		{
			name:   "a normalised name yields to an exact one",
			agents: []*Agent{agent("code.reviewer", SourceFile), agent("code_reviewer", SourceUser), agent("code reviewer", SourceUser)},
			want:   map[string]string{"code_reviewer": "code_reviewer", "code reviewer": "code_reviewer_2", "code.reviewer": "code_reviewer_3"},
			warns: []string{
				`agent "code reviewer": tool name "code_reviewer" is taken by agent "code_reviewer"; its tool is "code_reviewer_2"`,
				`agent "code.reviewer": tool name "code_reviewer" is taken by agent "code_reviewer"; its tool is "code_reviewer_3"`,
			},
		},
		{
			name:   "names that differ only in case",
			agents: []*Agent{agent("Reviewer", SourceUser), agent("reviewer", SourceUser)},
			want:   map[string]string{"Reviewer": "Reviewer", "reviewer": "reviewer_2"},
			warns:  []string{`agent "reviewer": tool name "reviewer" is taken by agent "Reviewer"; its tool is "reviewer_2"`},
		},
		{
			name:   "a normalised name alone is only reported",
			agents: []*Agent{agent("code.reviewer", SourceUser)},
			want:   map[string]string{"code.reviewer": "code_reviewer"},
			warns:  []string{`agent "code.reviewer": its name is not a valid tool name`},
		},
		{
			name:   "a suffix keeps 64 characters",
			agents: []*Agent{agent(strings.Repeat("x", 64), SourceUser), agent(strings.Repeat("x", 65), SourceUser)},
			want:   map[string]string{strings.Repeat("x", 64): strings.Repeat("x", 64), strings.Repeat("x", 65): strings.Repeat("x", 62) + "_2"},
			warns:  []string{"is taken by agent"},
		},
		{
			name:     "a prefix",
			agents:   []*Agent{agent("query", SourceUser)},
			prefix:   "claude_chat_",
			reserved: []string{"claude_chat_query"},
			want:     map[string]string{"query": "claude_chat_query_2"},
			warns:    []string{"is taken by the built-in tool"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The outcome does not depend on the order of the agents.
			for round := range 5 {
				agents := make([]*Agent, len(tc.agents))
				for i, a := range tc.agents {
					b := *a
					agents[i] = &b
				}
				rand.Shuffle(len(agents), func(i, j int) { agents[i], agents[j] = agents[j], agents[i] })
				warns := AssignToolNames(agents, tc.prefix, tc.reserved)
				for _, a := range agents {
					if want := tc.want[a.Name]; a.ToolName != want {
						t.Errorf("round %d: agent %q: tool name %q, want %q", round, a.Name, a.ToolName, want)
					}
					if !ValidToolName(a.ToolName) {
						t.Errorf("agent %q: invalid tool name %q", a.Name, a.ToolName)
					}
				}
				if len(warns) != len(tc.warns) {
					t.Fatalf("warnings %q, want %d like %q", warningTexts(warns), len(tc.warns), tc.warns)
				}
				for i, w := range warns {
					if !strings.Contains(w.String(), tc.warns[i]) {
						t.Errorf("warning %d = %q, want it to contain %q", i, w, tc.warns[i])
					}
				}
			}
		})
	}
}

func TestCutDescription(t *testing.T) {
	for _, tc := range []struct {
		s      string
		budget int
		want   string
	}{
		{"short", 100, "short"},
		{"short", 5, "short"},
		{"exactly ten", 10, "exactly…"}, // 11 bytes: cut, the blank before the ellipsis dropped
		{"hello world", 8, "hello…"},
		{"héllo", 5, "h…"},          // é is 2 bytes: not split
		{"日本語です", 9, "日本…"},         // 3 bytes a character
		{"a<b>c", 7, "a…"},          // '<' is \u003c in JSON: 6 bytes
		{"a\nbcdef", 7, "a\nb…"},    // \n is 2 bytes
		{"ab\"cdef", 7, "ab\"…"},    // and " too
		{"ab\"cdef", 8, "ab\"cdef"}, // which fits
		{"anything", 2, ""},         // no room for the ellipsis
		{"anything", 3, "…"},
		{"", 0, ""},
	} {
		got := CutDescription(tc.s, tc.budget)
		if got != tc.want {
			t.Errorf("CutDescription(%q, %d) = %q, want %q", tc.s, tc.budget, got, tc.want)
		}
	}
}

// TestCutDescriptionFits: every cut fits its budget, is valid UTF-8, and is
// as long as it can be.
func TestCutDescriptionFits(t *testing.T) {
	s := strings.Repeat("aé日🙂<\"\n ", 30)
	for budget := 0; budget <= jsonLen(s)+1; budget++ {
		got := CutDescription(s, budget)
		if jsonLen(got) > budget || !utf8.ValidString(got) {
			t.Fatalf("CutDescription(_, %d) = %q: %d bytes of JSON", budget, got, jsonLen(got))
		}
		if got == s {
			continue
		}
		prefix := strings.TrimSuffix(got, ellipsis)
		if budget >= jsonLen(ellipsis) && !strings.HasSuffix(got, ellipsis) || !strings.HasPrefix(s, prefix) {
			t.Fatalf("CutDescription(_, %d) = %q: not a prefix and an ellipsis", budget, got)
		}
		// One more character (and the blanks dropped before it) would not fit.
		rest := s[len(prefix):]
		n := len(rest) - len(strings.TrimLeft(rest, " \n"))
		_, size := utf8.DecodeRuneInString(rest[n:])
		if budget >= jsonLen(ellipsis) && jsonLen(s[:len(prefix)+n+size]+ellipsis) <= budget {
			t.Fatalf("CutDescription(_, %d) = %q: a longer prefix fits", budget, got)
		}
	}
}

// testTool stands for an MCP tool as the caller lists it.
type testTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// TestDescriptionBudget: a description cut to the budget keeps the whole
// tool within the limit, and uses the room there is.
func TestDescriptionBudget(t *testing.T) {
	const limit = 600
	schema := json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"What to ask"}},"required":["prompt"]}`)
	long := "Reviews <code> & \"diffs\": " + strings.Repeat("thorough review, ", 60)
	for _, tc := range []struct {
		name string
		tool testTool
	}{
		{"without description", testTool{Name: "code-reviewer", InputSchema: schema}},
		{"with one (not counted)", testTool{Name: "code-reviewer", Description: "something else", InputSchema: schema}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget, err := DescriptionBudget(tc.tool, limit)
			if err != nil {
				t.Fatal(err)
			}
			tool := tc.tool
			tool.Description = CutDescription(long, budget)
			b, err := json.Marshal(tool)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > limit {
				t.Errorf("tool is %d bytes, over %d: %s", len(b), limit, b)
			}
			if len(b) < limit-6 { // at most one escaped character short
				t.Errorf("tool is %d bytes: the budget %d leaves room unused", len(b), budget)
			}
			if utf8.RuneCount(b) > limit {
				t.Errorf("tool is %d characters", utf8.RuneCount(b))
			}
		})
	}

	if _, err := DescriptionBudget(testTool{Name: "x", InputSchema: json.RawMessage(`{"description":"` + strings.Repeat("s", limit) + `"}`)}, limit); err == nil {
		t.Error("no error for a tool over the limit without its description")
	}
	if _, err := DescriptionBudget([]string{"not", "an", "object"}, limit); err == nil {
		t.Error("no error for a tool that is not an object")
	}
	if b, err := DescriptionBudget(map[string]any{}, 100); err != nil || b != 100-len(`{"description":""}`) {
		t.Errorf("DescriptionBudget({}) = %d, %v", b, err)
	}
}
