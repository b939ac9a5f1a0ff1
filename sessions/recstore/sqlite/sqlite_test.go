package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/recstore"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/recstore/recstoretest"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

func openAt(t *testing.T, path string, opts Options) *Store {
	t.Helper()
	if opts.WatchEvery == 0 {
		opts.WatchEvery = 5 * time.Millisecond
	}
	s, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSuite(t *testing.T) {
	recstoretest.Run(t, func(t *testing.T) recstoretest.Opener {
		path := filepath.Join(t.TempDir(), "sessions.db")
		return func(t *testing.T) recstore.Store { return openAt(t, path, Options{}) }
	})
}

func record(id string) recstore.Record {
	return recstore.Record{Entry: store.Entry{SessionID: id, ClaudeSessionID: "c-" + id, Owner: "alice"}}
}

// TestCorruptFallsBack: a file that is not a database any more is moved
// aside and the backup taken at an earlier open comes back.
func TestCorruptFallsBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, record("kept"), recstore.Quota{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(ctx, path, Options{}) // a clean check: the backup is taken (Close waits for it)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(ctx, path, Options{BackupEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, record("after-backup"), recstore.Quota{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(path + ".bak"); err != nil {
		t.Fatalf("no backup: %v", err)
	}
	junk := make([]byte, 64<<10)
	for i := range junk {
		junk[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(path + "-wal")
	s = openAt(t, path, Options{})
	if _, err := s.Get(ctx, "kept"); err != nil {
		t.Fatalf("the backup's record: %v", err)
	}
	if _, err := s.Get(ctx, "after-backup"); !errors.Is(err, recstore.ErrNotFound) {
		t.Fatalf("a record written after the backup: %v, want ErrNotFound (lost with the corrupt file)", err)
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) == 0 {
		t.Fatal("the corrupt file was not kept aside")
	}
}

// TestCorruptNoBackup: without a backup a corrupt store starts empty.
func TestCorruptNoBackup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	if err := os.WriteFile(path, []byte("not a database, not at all, not even close........"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openAt(t, path, Options{})
	if n, err := s.Count(context.Background(), ""); err != nil || n != 0 {
		t.Fatalf("Count = %d, %v", n, err)
	}
}

// TestTombstonesAge: a tombstone older than TombstoneAge goes at the next
// close, and with it its conversations and transcripts.
func TestTombstonesAge(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := openAt(t, filepath.Join(t.TempDir(), "sessions.db"), Options{Now: func() time.Time { return now }})
	for _, id := range []string{"old", "new"} {
		if err := s.Create(ctx, record(id), recstore.Quota{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AppendTranscript(ctx, recstore.Chunk{ID: "old", ClaudeSessionID: "c-old", Data: []byte("x")}, recstore.Lease{}); err != nil {
		t.Fatal(err)
	}
	if err := s.CloseSession(ctx, "old", recstore.Lease{}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(recstore.TombstoneAge + time.Hour)
	if err := s.CloseSession(ctx, "new", recstore.Lease{}); err != nil {
		t.Fatal(err)
	}
	if _, known, _ := s.ConversationOwner(ctx, "c-old"); known {
		t.Fatal("an expired tombstone's conversation is still known")
	}
	if _, err := s.Get(ctx, "old"); !errors.Is(err, recstore.ErrNotFound) {
		t.Fatalf("an expired tombstone: %v", err)
	}
	if b, _ := s.ReadTranscript(ctx, "old", "c-old"); b != nil {
		t.Fatal("an expired tombstone's transcript is kept")
	}
	if owner, known, _ := s.ConversationOwner(ctx, "c-new"); !known || owner != "alice" {
		t.Fatal("a fresh tombstone's conversation is forgotten")
	}
}

func BenchmarkStore(b *testing.B) {
	recstoretest.Bench(b, func(b *testing.B) recstore.Store {
		s, err := Open(context.Background(), filepath.Join(b.TempDir(), "sessions.db"), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}

// TestChangesTrimmed: without a watcher, the changes every write appends
// are trimmed to the last ten minutes by the writers themselves.
func TestChangesTrimmed(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := openAt(t, filepath.Join(t.TempDir(), "sessions.db"), Options{Now: func() time.Time { return now }})
	if err := s.Create(ctx, record("s"), recstore.Quota{}); err != nil {
		t.Fatal(err)
	}
	const step = 10 * time.Second
	for range trimEvery + 1 {
		now = now.Add(step)
		if err := s.Put(ctx, record("s"), recstore.Lease{}, 0); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := s.SQL.QueryRow(`SELECT count(*) FROM changes`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if kept := int(changesKept/step) + 2; n > kept {
		t.Fatalf("%d changes kept after %d writes %s apart, want at most %d", n, trimEvery+2, step, kept)
	}
}

// TestStoreFilesPrivate: the database and its -wal and -shm files are the
// server user's alone (0600), new or left 0644 by an older server: they
// hold prompts and MCP servers' headers (defect 9 of issue 43).
func TestStoreFilesPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	check := func(when string) {
		t.Helper()
		for _, f := range []string{path, path + "-wal", path + "-shm"} {
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %s is %v, want 0600", when, filepath.Base(f), fi.Mode().Perm())
			}
		}
	}
	st, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Create(context.Background(), recstore.Record{Entry: store.Entry{SessionID: "s1", Owner: "alice"}}, recstore.Quota{}); err != nil {
		t.Fatal(err)
	}
	check("a new store")
	st.Close()
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		_ = os.Chmod(f, 0o644)
	}
	st, err = Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Create(context.Background(), recstore.Record{Entry: store.Entry{SessionID: "s2", Owner: "alice"}}, recstore.Quota{}); err != nil {
		t.Fatal(err)
	}
	check("an older server's store")
}
