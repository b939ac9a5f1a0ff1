// Package backend opens the store.Store a target names: a postgres://
// (or postgresql://) URL is the PostgreSQL store, anything else the path
// of the embedded SQLite store, "" its default path
// ($XDG_STATE_HOME/claude-agent-mcp/sessions.db, beside the registry file).
package backend

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/postgres"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/sqlite"
)

// IsURL reports whether target names a PostgreSQL database.
func IsURL(target string) bool {
	return strings.HasPrefix(target, "postgres://") || strings.HasPrefix(target, "postgresql://")
}

// Open opens the store target names. recover is what to do with a damaged
// SQLite file (sqlite.RecoverBackup, sqlite.RecoverFresh; "" refuses it);
// a PostgreSQL database is the operator's to repair, and refuses it.
func Open(ctx context.Context, target, recover string, log *slog.Logger) (store.Store, error) {
	if IsURL(target) {
		if recover != "" {
			return nil, fmt.Errorf("--store-recover %s applies to a SQLite store file; a PostgreSQL database is repaired with its own tools", recover)
		}
		return postgres.Open(ctx, target, postgres.Options{Log: log})
	}
	switch recover {
	case "", sqlite.RecoverBackup, sqlite.RecoverFresh:
	default:
		return nil, fmt.Errorf("--store-recover %q: want %s or %s", recover, sqlite.RecoverBackup, sqlite.RecoverFresh)
	}
	if target == "" {
		p, err := sqlite.DefaultPath()
		if err != nil {
			return nil, err
		}
		target = p
	}
	return sqlite.Open(ctx, target, sqlite.Options{Log: log, Recover: recover})
}
