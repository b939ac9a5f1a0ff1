package claudeagent

import (
	"slices"
	"testing"
)

// TestModesByStrictness: each permission mode has its own place in the
// order of strictness, and both lists hold the same modes.
func TestModesByStrictness(t *testing.T) {
	want := []string{"plan", "dontAsk", "default", "acceptEdits", "auto", "bypassPermissions"}
	if !slices.Equal(ModesByStrictness, want) {
		t.Errorf("ModesByStrictness = %v, want %v", ModesByStrictness, want)
	}
	if got := slices.Sorted(slices.Values(PermissionModes)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("PermissionModes = %v, want the modes of %v", PermissionModes, want)
	}
	for i, m := range ModesByStrictness {
		if got := ModeStrictness(m); got != i {
			t.Errorf("ModeStrictness(%s) = %d, want %d", m, got, i)
		}
	}
	if got := ModeStrictness("accept"); got != -1 {
		t.Errorf("ModeStrictness(accept) = %d, want -1", got)
	}
}
