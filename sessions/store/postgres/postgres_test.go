package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/pgtest"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/registryfile"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func openURL(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		url := pgtest.New(t)
		return func(t *testing.T) store.Store { return openURL(t, url) }
	})
}

// TestMigrateTwice: a second open of a migrated database changes nothing,
// and a database of a newer schema is refused.
func TestMigrateTwice(t *testing.T) {
	url := pgtest.New(t)
	s := openURL(t, url)
	openURL(t, url)
	if _, err := s.SQL.Exec(`UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), url, Options{}); err == nil {
		t.Fatal("a store of a newer schema was opened")
	}
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store {
		s, err := Open(context.Background(), pgtest.New(b), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}

// TestWatchReconnects: a watcher whose connection is cut listens again,
// says so with a KindResync, and goes on delivering changes.
func TestWatchReconnects(t *testing.T) {
	url := pgtest.New(t)
	a, b := openURL(t, url), openURL(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch, err := b.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.SQL.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND datname = current_database() AND pid <> pg_backend_pid()`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("cut %d listening connections, want 1", n)
	}
	if c := <-ch; c.Kind != store.KindResync {
		t.Fatalf("first change after the cut = %+v, want a resync", c)
	}
	if err := a.Create(ctx, store.Record{Entry: registryfile.Entry{SessionID: "s1"}}, store.Quota{}); err != nil {
		t.Fatal(err)
	}
	if c := <-ch; c != (store.Change{ID: "s1", Kind: store.KindCreated}) {
		t.Fatalf("change after the resync = %+v", c)
	}
}

func TestTombstones(t *testing.T) {
	storetest.Tombstones(t, func(t *testing.T, max int) store.Store {
		s, err := Open(context.Background(), pgtest.New(t), Options{MaxTombstones: max})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
