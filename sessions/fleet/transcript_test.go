package fleet

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/beneath"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/registryfile"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/sqlite"
)

// TestSaveTranscriptAppends: each save stores only what the file gained
// since the last one, and the stored transcript is the file, byte for
// byte; a save with nothing new stores nothing.
func TestSaveTranscriptAppends(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sessions.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Create(ctx, store.Record{Entry: registryfile.Entry{SessionID: "s1", ClaudeSessionID: "c1", Owner: "alice"}}, store.Quota{}); err != nil {
		t.Fatal(err)
	}
	i := New(Config{Store: st})
	file := beneath.Path{Dir: t.TempDir(), Rel: "c1.jsonl"}
	path := file.String()
	var want strings.Builder
	for n, add := range []string{`{"n":1}` + "\n", "", strings.Repeat("x", 3<<20) + "\n", `{"n":3}` + "\n"} {
		want.WriteString(add)
		if err := os.WriteFile(path, []byte(want.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		has, err := i.SaveTranscript(ctx, "s1", "c1", file, `{"n":3}`)
		if err != nil {
			t.Fatalf("save %d: %v", n, err)
		}
		// The mark is in the last add alone.
		if want := strings.Contains(add, `{"n":3}`); has != want {
			t.Errorf("save %d: holds the mark %v, want %v", n, has, want)
		}
		runtime.ReadMemStats(&after)
		// The new bytes are read into one buffer of their size: not the
		// doublings of a buffer grown as it reads (twice as many bytes).
		if alloc, limit := after.TotalAlloc-before.TotalAlloc, uint64(len(add))*3/2+1<<20; alloc > limit {
			t.Errorf("save %d of %d new bytes allocated %d bytes, want at most %d", n, len(add), alloc, limit)
		}
		got, err := st.ReadTranscript(ctx, "s1", "c1")
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want.String() {
			t.Fatalf("after save %d the store holds %d bytes, want the file's %d", n, len(got), want.Len())
		}
		if off := i.offsets["s1/c1"]; off != int64(want.Len()) {
			t.Fatalf("after save %d the offset is %d, want %d", n, off, want.Len())
		}
	}
	var chunks int
	if err := st.SQL.QueryRow(`SELECT count(*) FROM chunks`).Scan(&chunks); err != nil {
		t.Fatal(err)
	}
	if chunks != 3 {
		t.Fatalf("%d chunks stored for three saves with new bytes and one without, want 3", chunks)
	}
}
