package sessions

import (
	"maps"
	"testing"
)

// TestMergeEnv: later maps win; no variables is nil.
func TestMergeEnv(t *testing.T) {
	if got := mergeEnv(nil, map[string]string{}); got != nil {
		t.Errorf("no variables: %v, want nil", got)
	}
	got := mergeEnv(subAgentEnv, map[string]string{"CLAUDE_CODE_DISABLE_CRON": "0", "A": "1"}, map[string]string{"A": "2"})
	want := maps.Clone(subAgentEnv)
	want["CLAUDE_CODE_DISABLE_CRON"], want["A"] = "0", "2"
	if !maps.Equal(got, want) {
		t.Errorf("mergeEnv = %v, want %v", got, want)
	}
}
