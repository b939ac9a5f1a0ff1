package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreCommand: `store import` then `store export` through run, the
// binary's entry (the commands themselves: sessions/recstore/storecmd).
func TestStoreCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sessions.db")
	var out, errb bytes.Buffer
	if code := run([]string{"store", "import", "--store", db, "-"}, strings.NewReader(`{"sessionId":"s1","claudeSessionId":"c1","state":"dormant"}`), &out, &errb); code != 0 {
		t.Fatalf("store import: exit %d: %s", code, errb.String())
	}
	out.Reset()
	if code := run([]string{"store", "export", "--store", db}, nil, &out, &errb); code != 0 {
		t.Fatalf("store export: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `"sessionId":"s1"`) || !strings.Contains(out.String(), `"claudeSessionId":"c1"`) {
		t.Fatalf("export: %s", out.String())
	}
	if code := run([]string{"store"}, nil, &out, &errb); code != 2 {
		t.Fatalf("store without a verb: exit %d", code)
	}
}
