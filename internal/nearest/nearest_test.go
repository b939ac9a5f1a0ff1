package nearest

import "testing"

func TestName(t *testing.T) {
	t.Parallel()
	names := []string{"cwd", "model", "permissionMode", "sessionId", "systemPrompt", "appendSystemPrompt", "maxTurns", "maxBudgetUsd"}
	for _, tc := range []struct{ in, want string }{
		{"modle", "model"}, // two neighbours swapped
		{"mdoel", "model"}, // likewise
		{"modl", "model"},  // one missing
		{"permisionMode", "permissionMode"},
		{"sessionID", "sessionId"},
		{"session_id", "sessionId"}, // within a third of its length
		{"system", "systemPrompt"},  // the only name it begins
		{"max", ""},                 // begins two
		{"prompt", ""},              // nothing near enough
		{"x", ""},
		{"", ""},
	} {
		if got := Name(tc.in, names); got != tc.want {
			t.Errorf("Name(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDistance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"idle-timout", "idle-timeout", 1},
		{"flaw", "lawn", 2}, {"modle", "model", 1}, {"ab", "ba", 1}, {"abc", "ca", 3}, {"idle-timeuot", "idle-timeout", 1},
	} {
		if d := Distance(tc.a, tc.b); d != tc.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
		if d := Distance(tc.b, tc.a); d != tc.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.b, tc.a, d, tc.d)
		}
	}
}
