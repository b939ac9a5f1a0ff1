package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/registryfile"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/storetest"
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
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		path := filepath.Join(t.TempDir(), "sessions.db")
		return func(t *testing.T) store.Store { return openAt(t, path, Options{}) }
	})
}

func record(id string) store.Record {
	return store.Record{Entry: registryfile.Entry{SessionID: id, ClaudeSessionID: "c-" + id, Owner: "alice"}}
}

// damagedStore makes a store at path with the record "kept", a backup of
// it, then the record "after-backup" (the backup does not have it), and
// returns.
func damagedStore(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, record("kept"), store.Quota{}); err != nil {
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
	if err := s.Create(ctx, record("after-backup"), store.Quota{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(path + ".bak"); err != nil {
		t.Fatalf("no backup: %v", err)
	}
}

// damage makes the store at path empty, truncated or garbage.
func damage(t *testing.T, path, how string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	switch how {
	case "empty":
		data = nil
	case "truncated":
		data = data[:len(data)/3]
	case "garbage":
		data = garbage()
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
}

// garbage is 64 KiB that is not a database.
func garbage() []byte {
	data := make([]byte, 64<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	return data
}

// TestDamagedRefused: a store file that is empty, truncated or not a
// database is refused at open with an error naming the file and its
// backup, and nothing is changed (issue 44: a 0-byte sessions.db opened as
// an empty store, and an open overwrote the backup with it); with
// RecoverBackup the backup comes back, the damaged file kept aside; with
// RecoverFresh an empty store starts, and the backup is kept.
func TestDamagedRefused(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"empty", "truncated", "garbage"} {
		t.Run(how, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sessions.db")
			damagedStore(t, path)
			damage(t, path, how)
			before, _ := os.ReadFile(path)
			bak, _ := os.ReadFile(path + ".bak")
			_, err := Open(ctx, path, Options{})
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), path+".bak") ||
				!strings.Contains(err.Error(), "holds 1 open sessions") || !strings.Contains(err.Error(), "--store-recover") {
				t.Fatalf("opening a store that is %s: %v", how, err)
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Error("the refused open changed the file")
			}
			if after, _ := os.ReadFile(path + ".bak"); string(after) != string(bak) {
				t.Error("the refused open changed the backup")
			}
			s := openAt(t, path, Options{Recover: RecoverBackup})
			if _, err := s.Get(ctx, "kept"); err != nil {
				t.Fatalf("the backup's record: %v", err)
			}
			if _, err := s.Get(ctx, "after-backup"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("a record written after the backup: %v, want ErrNotFound (lost with the damaged file)", err)
			}
			if aside, _ := filepath.Glob(path + ".damaged-*"); len(aside) == 0 {
				t.Fatal("the damaged file was not kept aside")
			}
		})
	}
	t.Run("fresh", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sessions.db")
		damagedStore(t, path)
		damage(t, path, "garbage")
		bak, _ := os.ReadFile(path + ".bak")
		s := openAt(t, path, Options{Recover: RecoverFresh})
		if n, err := s.Count(ctx, ""); err != nil || n != 0 {
			t.Fatalf("Count = %d, %v; want an empty store", n, err)
		}
		s.Close()
		if after, _ := os.ReadFile(path + ".bak"); string(after) != string(bak) {
			t.Error("starting afresh changed the backup")
		}
	})
}

// TestNoBackupRefused: a damaged store without a backup is refused too,
// saying there is none; RecoverFresh starts an empty one.
func TestNoBackupRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	if err := os.WriteFile(path, []byte("not a database, not at all, not even close........"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), path, Options{}); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "there is no backup") {
		t.Fatalf("a damaged store without a backup: %v", err)
	}
	if _, err := Open(context.Background(), path, Options{Recover: RecoverBackup}); err == nil || !strings.Contains(err.Error(), "cannot be restored") {
		t.Fatalf("restoring a backup that is not there: %v", err)
	}
	s := openAt(t, path, Options{Recover: RecoverFresh})
	if n, err := s.Count(context.Background(), ""); err != nil || n != 0 {
		t.Fatalf("Count = %d, %v", n, err)
	}
}

// TestBackupNotOverwrittenBySmaller: an open's backup does not replace one
// that holds more sessions than the store (a store that lost them would
// overwrite the last good copy).
func TestBackupNotOverwrittenBySmaller(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	damagedStore(t, path) // backup: 1 session
	os.Remove(path)       // the store is gone: a new one starts empty
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	bak, _ := os.ReadFile(path + ".bak")
	s, err := Open(ctx, path, Options{BackupEvery: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	s.Close() // waits for the backup
	if after, _ := os.ReadFile(path + ".bak"); string(after) != string(bak) {
		t.Error("an empty store's backup replaced one of more sessions")
	}
}

// TestRecoverRefusedWhileOpen: a damaged store that another process (an
// instance sharing it) has open is not moved from under it, even when the
// operator asks for the backup (issue 44: the third instance moved the file
// and the first two went on writing to the moved one).
func TestRecoverRefusedWhileOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	damagedStore(t, path)
	other := exec.Command(os.Args[0], "-test.run=^TestHoldStoreOpen$")
	other.Env = append(os.Environ(), holdStoreEnv+"="+path)
	stdout, err := other.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "open") {
		t.Fatalf("the other process: %q, %v", line, err)
	}
	// Only the main file is damaged: the other process keeps its -wal and
	// -shm (and its lock on the latter) as a running instance would.
	if err := os.WriteFile(path, garbage(), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, path, Options{Recover: RecoverBackup})
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("recovering a store another process has open: %v", err)
	}
	if aside, _ := filepath.Glob(path + ".damaged-*"); len(aside) != 0 {
		t.Errorf("moved aside from under the other process: %v", aside)
	}
}

// holdStoreEnv makes TestHoldStoreOpen hold the store it names open.
const holdStoreEnv = "SQLITE_TEST_HOLD_STORE"

// TestHoldStoreOpen is the other process of TestRecoverRefusedWhileOpen:
// it opens the store, says so, and holds it until killed.
func TestHoldStoreOpen(t *testing.T) {
	path := os.Getenv(holdStoreEnv)
	if path == "" {
		t.Skip("the other process of TestRecoverRefusedWhileOpen")
	}
	s, err := Open(context.Background(), path, Options{BackupEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Count(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	fmt.Println("open")
	select {}
}

// TestTombstonesAge: a tombstone older than TombstoneAge goes at the next
// close, and with it its conversations and transcripts.
func TestTombstonesAge(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := openAt(t, filepath.Join(t.TempDir(), "sessions.db"), Options{Now: func() time.Time { return now }})
	for _, id := range []string{"old", "new"} {
		if err := s.Create(ctx, record(id), store.Quota{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AppendTranscript(ctx, store.Chunk{ID: "old", ClaudeSessionID: "c-old", Data: []byte("x")}, store.Lease{}); err != nil {
		t.Fatal(err)
	}
	if err := s.CloseSession(ctx, "old", store.Lease{}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(store.TombstoneAge + time.Hour)
	if err := s.CloseSession(ctx, "new", store.Lease{}); err != nil {
		t.Fatal(err)
	}
	if _, known, _ := s.ConversationOwner(ctx, "c-old"); known {
		t.Fatal("an expired tombstone's conversation is still known")
	}
	if _, err := s.Get(ctx, "old"); !errors.Is(err, store.ErrNotFound) {
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
	storetest.Bench(b, func(b *testing.B) store.Store {
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
	if err := s.Create(ctx, record("s"), store.Quota{}); err != nil {
		t.Fatal(err)
	}
	const step = 10 * time.Second
	for range trimEvery + 1 {
		now = now.Add(step)
		if err := s.Put(ctx, record("s"), store.Lease{}, 0); err != nil {
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
	if err := st.Create(context.Background(), store.Record{Entry: registryfile.Entry{SessionID: "s1", Owner: "alice"}}, store.Quota{}); err != nil {
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
	if err := st.Create(context.Background(), store.Record{Entry: registryfile.Entry{SessionID: "s2", Owner: "alice"}}, store.Quota{}); err != nil {
		t.Fatal(err)
	}
	check("an older server's store")
}

func TestTombstones(t *testing.T) {
	storetest.Tombstones(t, func(t *testing.T, max int) store.Store {
		return openAt(t, filepath.Join(t.TempDir(), "sessions.db"), Options{MaxTombstones: max})
	})
}

// TestMigrateTombstones: a store of schema version 1, whose tombstones
// carry a body and whose closed sessions kept their transcripts, is
// brought to version 2: the tombstone still refuses, its conversation's
// owner is still known, and the transcript is gone.
func TestMigrateTombstones(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	stmts := append(slices.Clone(schema[0]),
		`CREATE TABLE schema_version (version INTEGER NOT NULL)`,
		`INSERT INTO schema_version (version) VALUES (1)`,
		`INSERT INTO tombstones (id, closed, body) VALUES ('gone', 1, '{"closed":"1970-01-01T00:00:00Z","owner":"alice","operator":["model"],"claudeSessionIds":["c-gone"]}')`,
		`INSERT INTO conversations (claude_session_id, session_id, owner) VALUES ('c-gone', 'gone', 'alice')`,
		`INSERT INTO chunks (session_id, claude_session_id, pos, data) VALUES ('gone', 'c-gone', 0, x'7b7d0a')`)
	for _, stmt := range stmts {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()
	s := openAt(t, path, Options{Now: func() time.Time { return time.Unix(0, 2) }})
	if _, err := s.Get(ctx, "gone"); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("a migrated tombstone: %v, want ErrClosed", err)
	}
	if owner, known, _ := s.ConversationOwner(ctx, "c-gone"); !known || owner != "alice" {
		t.Fatalf("a migrated tombstone's conversation: %q %v", owner, known)
	}
	if b, _ := s.ReadTranscript(ctx, "gone", "c-gone"); b != nil {
		t.Fatalf("a closed session's transcript survived the migration: %q", b)
	}
	var v int
	if err := s.SQL.QueryRow(`SELECT version FROM schema_version`).Scan(&v); err != nil || v != 2 {
		t.Fatalf("schema version %d, %v; want 2", v, err)
	}
}

// BenchmarkCloseSession creates and closes sessions as one user's loop
// would, each with a conversation and a turn's history, and reports what
// the store keeps of each closed one (database pages in use, per close,
// past the table of recent changes, which the store trims after ten
// minutes).
func BenchmarkCloseSession(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "sessions.db"), Options{BackupEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	used := func() int64 {
		if _, err := s.SQL.Exec(`DELETE FROM changes`); err != nil {
			b.Fatal(err)
		}
		var pages, free, size int64
		for q, v := range map[string]*int64{`PRAGMA page_count`: &pages, `PRAGMA freelist_count`: &free, `PRAGMA page_size`: &size} {
			if err := s.SQL.QueryRow(q).Scan(v); err != nil {
				b.Fatal(err)
			}
		}
		return (pages - free) * size
	}
	before := used()
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("session-%08d-%s", i, strings.Repeat("x", 20))
		r := record(id)
		r.Options.Model = "claude-sonnet-4-5"
		if err := s.Create(ctx, r, store.Quota{}); err != nil {
			b.Fatal(err)
		}
		if err := s.AppendHistory(ctx, id, 0, []history.Entry{{Kind: "prompt", Text: "hello"}, {Kind: "text", Text: "hi"}}, store.Lease{}); err != nil {
			b.Fatal(err)
		}
		if err := s.CloseSession(ctx, id, store.Lease{}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(used()-before)/float64(b.N), "bytes/closed")
}
