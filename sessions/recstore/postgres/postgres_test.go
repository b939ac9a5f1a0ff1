package postgres

import (
	"context"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/pgtest"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/recstore"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/recstore/recstoretest"
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
	recstoretest.Run(t, func(t *testing.T) recstoretest.Opener {
		url := pgtest.New(t)
		return func(t *testing.T) recstore.Store { return openURL(t, url) }
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
	recstoretest.Bench(b, func(b *testing.B) recstore.Store {
		s, err := Open(context.Background(), pgtest.New(b), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}
