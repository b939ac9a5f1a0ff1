// Package postgres is the store.Store of a fleet: a PostgreSQL
// database (postgres://… URL) through pgx, shared by instances on several
// machines with nothing else shared.
//
//   - The schema is created or migrated at open, versioned (the table
//     schema_version), under an advisory lock so that instances starting
//     together migrate once.
//   - Leases with fencing live in the database (the table leases: holder,
//     epoch, expiry), on the database's clock (clock_timestamp()), not the
//     instances': every write of a session locks its record row and checks
//     the writer's epoch in the same transaction.
//   - Quotas are counted in the create's transaction: the open sessions
//     are counted in the table counts (a row for all, one per owner, kept
//     by every create, close and import), whose rows a create locks FOR
//     UPDATE (all's, then the owner's: every writer takes them in that
//     order) before it reads them (READ COMMITTED: the read after the lock
//     sees every create committed before it).
//   - Changes are announced with pg_notify on the channel recstore inside
//     the writing transaction (so at its commit), and Watch LISTENs on a
//     connection of its own: no polling.
//   - Transcripts are stored incrementally in the table chunks.
package postgres

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/internal/sqldb"
)

// channel is the LISTEN/NOTIFY channel of changes.
const channel = "recstore"

// Options configures Open; the zero value is the default.
type Options struct {
	Log *slog.Logger
	// MaxConns caps the connections of the handle; 0 is 8.
	MaxConns int
	// MaxTombstones bounds the tombstones kept; 0 is store.MaxTombstones.
	MaxTombstones int
}

// Store is the PostgreSQL store.
type Store struct {
	*sqldb.DB
	cfg    *pgx.ConnConfig
	opts   Options
	origin string
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url (postgres://…) and creates or
// migrates its schema.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 8
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("reading the store's URL: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(opts.MaxConns)
	db.SetMaxIdleConns(opts.MaxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	var b [8]byte
	_, _ = rand.Read(b[:])
	s := &Store{cfg: cfg, opts: opts, origin: hex.EncodeToString(b[:])}
	s.DB = &sqldb.DB{SQL: db, D: s.dialect(), MaxTombstones: opts.MaxTombstones}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting to the session store (PostgreSQL at %s:%d): %w", cfg.Host, cfg.Port, err)
	}
	if err := s.Migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening the session store: %w", err)
	}
	return s, nil
}

// Close implements store.Store.
func (s *Store) Close() error { return s.SQL.Close() }

// payload is a change as notified.
type payload struct {
	ID     string     `json:"id"`
	Kind   store.Kind `json:"kind"`
	Origin string     `json:"origin"`
}

// dialect is PostgreSQL's: numbered placeholders, row locks, the
// database's clock, NOTIFY.
func (s *Store) dialect() sqldb.Dialect {
	return sqldb.Dialect{
		Numbered:  true,
		ForUpdate: " FOR UPDATE",
		Contains:  "strpos(name, ?) > 0",
		Now: func(ctx context.Context, tx *sql.Tx) (time.Time, error) {
			var now time.Time
			err := tx.QueryRowContext(ctx, `SELECT clock_timestamp()`).Scan(&now)
			return now.UTC(), err
		},
		LockCreate: lockCreate,
		Notify: func(ctx context.Context, tx *sql.Tx, id string, kind store.Kind) error {
			b, _ := json.Marshal(payload{ID: id, Kind: kind, Origin: s.origin})
			_, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, channel, string(b))
			return err
		},
		LockSchema: func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7402260001)`)
			return err
		},
		Schema: schema,
	}
}

// lockCreate locks the count rows of all sessions and then of owner's,
// until tx ends (every writer of the counts takes them in that order).
func lockCreate(ctx context.Context, tx *sql.Tx, owner string) error {
	for _, k := range []string{sqldb.CountAll, sqldb.CountOwner(owner)} {
		if _, err := tx.ExecContext(ctx, `INSERT INTO counts (name, n) VALUES ($1, 0) ON CONFLICT (name) DO NOTHING`, k); err != nil {
			return fmt.Errorf("locking the quota: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `SELECT n FROM counts WHERE name = $1 FOR UPDATE`, k); err != nil {
			return fmt.Errorf("locking the quota: %w", err)
		}
	}
	return nil
}

// schema is the DDL of each version.
var schema = [][]string{sqldb.SchemaV1("BIGINT", "DOUBLE PRECISION", "BYTEA"), sqldb.SchemaV2("BIGINT", "")}
