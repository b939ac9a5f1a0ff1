package cli

import (
	"maps"
	"testing"
)

// TestMergeEnv: later maps win; no variables is nil.
func TestMergeEnv(t *testing.T) {
	if got := MergeEnv(nil, map[string]string{}); got != nil {
		t.Errorf("no variables: %v, want nil", got)
	}
	got := MergeEnv(SubAgentEnv, map[string]string{"CLAUDE_CODE_DISABLE_CRON": "0", "A": "1"}, map[string]string{"A": "2"})
	want := maps.Clone(SubAgentEnv)
	want["CLAUDE_CODE_DISABLE_CRON"], want["A"] = "0", "2"
	if !maps.Equal(got, want) {
		t.Errorf("MergeEnv = %v, want %v", got, want)
	}
}
