// Package sqldb is the store.Store both SQL backends share, over
// database/sql: the SQLite backend (store/sqlite) and the PostgreSQL
// one (store/postgres) differ only in what their Dialect says (the
// placeholders, row locks, the clock, how a change is announced, the
// schema) and in Watch, which each implements its own way.
package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// Dialect is what differs between the SQL backends.
type Dialect struct {
	// Numbered: placeholders are $1, $2, … (PostgreSQL), else ?.
	Numbered bool
	// ForUpdate is appended to a SELECT whose rows the transaction writes
	// next (" FOR UPDATE"; "" where a write transaction excludes every
	// other writer, as SQLite's BEGIN IMMEDIATE does).
	ForUpdate string
	// Contains is the condition that the name column contains the
	// argument, case-sensitively.
	Contains string
	// Now is the clock of leases and tombstones within tx.
	Now func(ctx context.Context, tx *sql.Tx) (time.Time, error)
	// LockCreate locks the count rows of all sessions and of owner's
	// (CountAll, CountOwner) until tx ends; nil when write transactions
	// are serialized anyway.
	LockCreate func(ctx context.Context, tx *sql.Tx, owner string) error
	// Notify announces a change of session id within tx (delivered at its
	// commit).
	Notify func(ctx context.Context, tx *sql.Tx, id string, kind store.Kind) error
	// Schema is the DDL of each schema version, from 1.
	Schema [][]string
	// LockSchema serializes migrations within tx; nil when write
	// transactions are serialized anyway.
	LockSchema func(ctx context.Context, tx *sql.Tx) error
}

// DB is the store over one database.
type DB struct {
	SQL *sql.DB
	D   Dialect
	// MaxTombstones bounds the tombstones kept, the oldest dropped first
	// (checked every pruneEvery-th close); 0 is store.MaxTombstones.
	MaxTombstones int

	closes atomic.Int64 // closes by this handle
}

func (db *DB) maxTombstones() int {
	if db.MaxTombstones > 0 {
		return db.MaxTombstones
	}
	return store.MaxTombstones
}

// SchemaV1 is the DDL of schema version 1 that both dialects share, in a
// dialect's names of a 64-bit integer, a double and a byte string; a
// dialect may add tables of its own after it.
func SchemaV1(integer, double, bytes string) []string {
	return []string{
		`CREATE TABLE records (id TEXT PRIMARY KEY, owner TEXT NOT NULL, name TEXT NOT NULL, state TEXT NOT NULL, last_used ` + integer + ` NOT NULL, body TEXT NOT NULL)`,
		`CREATE INDEX records_last ON records (last_used DESC, id DESC)`,
		`CREATE INDEX records_owner ON records (owner, last_used DESC, id DESC)`,
		`CREATE TABLE leases (id TEXT PRIMARY KEY, holder TEXT NOT NULL, epoch ` + integer + ` NOT NULL, expires ` + integer + ` NOT NULL)`,
		`CREATE TABLE tombstones (id TEXT PRIMARY KEY, closed ` + integer + ` NOT NULL, body TEXT NOT NULL)`,
		`CREATE INDEX tombstones_closed ON tombstones (closed)`,
		`CREATE TABLE conversations (claude_session_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, owner TEXT NOT NULL)`,
		`CREATE INDEX conversations_session ON conversations (session_id)`,
		`CREATE TABLE spent (owner TEXT PRIMARY KEY, usd ` + double + ` NOT NULL)`,
		`CREATE TABLE chunks (session_id TEXT NOT NULL, claude_session_id TEXT NOT NULL, pos ` + integer + ` NOT NULL, data ` + bytes + ` NOT NULL, PRIMARY KEY (session_id, claude_session_id, pos))`,
		`CREATE TABLE history (session_id TEXT NOT NULL, seq ` + integer + ` NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (session_id, seq))`,
		`CREATE TABLE counts (name TEXT PRIMARY KEY, n ` + integer + ` NOT NULL)`,
	}
}

// SchemaV2 is the DDL of schema version 2, in a dialect whose 64-bit
// integer type is integer and whose tables keyed by text alone take the
// suffix keyed: a tombstone is an id, a time and an epoch, and a closed
// session's transcripts and history go at its close.
func SchemaV2(integer, keyed string) []string {
	return []string{
		`CREATE TABLE tombstones_v2 (id TEXT PRIMARY KEY, closed ` + integer + ` NOT NULL, epoch ` + integer + ` NOT NULL)` + keyed,
		`INSERT INTO tombstones_v2 (id, closed, epoch) SELECT id, closed, 0 FROM tombstones`,
		`DROP TABLE tombstones`,
		`ALTER TABLE tombstones_v2 RENAME TO tombstones`,
		`CREATE INDEX tombstones_closed ON tombstones (closed)`,
		`DELETE FROM chunks WHERE session_id IN (SELECT id FROM tombstones)`,
		`DELETE FROM history WHERE session_id IN (SELECT id FROM tombstones)`,
	}
}

// Q writes the placeholders of query as the dialect wants them.
func (db *DB) Q(query string) string {
	if !db.D.Numbered {
		return query
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}

// Write runs fn in a write transaction; now is the dialect's clock.
func (db *DB) Write(ctx context.Context, fn func(tx *sql.Tx, now time.Time) error) error {
	tx, err := db.SQL.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("beginning a transaction: %w", err)
	}
	now, err := db.D.Now(ctx, tx)
	if err == nil {
		err = fn(tx, now)
	}
	if err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing: %w", err)
	}
	return nil
}

func (db *DB) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	return tx.ExecContext(ctx, db.Q(query), args...)
}

// SchemaVersion is the version Migrate brings a store to.
func (db *DB) SchemaVersion() int { return len(db.D.Schema) }

// Migrate creates the schema, or brings it up to the newest version, in
// one transaction; a store of a newer version is refused.
func (db *DB) Migrate(ctx context.Context) error {
	return db.Write(ctx, func(tx *sql.Tx, _ time.Time) error {
		if db.D.LockSchema != nil {
			if err := db.D.LockSchema(ctx, tx); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
			return fmt.Errorf("creating the schema: %w", err)
		}
		have := 0
		err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&have)
		if errors.Is(err, sql.ErrNoRows) {
			_, err = tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (0)`)
		}
		if err != nil {
			return fmt.Errorf("reading the schema version: %w", err)
		}
		if have > len(db.D.Schema) {
			return fmt.Errorf("the store has schema version %d, newer than this claude-agent-mcp knows (%d): run a newer version", have, len(db.D.Schema))
		}
		for v := have + 1; v <= len(db.D.Schema); v++ {
			for _, stmt := range db.D.Schema[v-1] {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("migrating the schema to version %d: %w", v, err)
				}
			}
		}
		_, err = tx.ExecContext(ctx, db.Q(`UPDATE schema_version SET version = ?`), len(db.D.Schema))
		return err
	})
}

// lockRecord locks the record of the open session id for the rest of tx,
// and returns its owner: ErrClosed for a closed one, else ErrNotFound.
func (db *DB) lockRecord(ctx context.Context, tx *sql.Tx, id string) (owner string, err error) {
	err = tx.QueryRowContext(ctx, db.Q(`SELECT owner FROM records WHERE id = ?`+db.D.ForUpdate), id).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		var one int
		if tx.QueryRowContext(ctx, db.Q(`SELECT 1 FROM tombstones WHERE id = ?`), id).Scan(&one) == nil {
			return "", fmt.Errorf("%w: session %s", store.ErrClosed, id)
		}
		return "", fmt.Errorf("%w: session %s", store.ErrNotFound, id)
	}
	return owner, err
}

// lease reads the lease row of session id within tx ("" holder: none).
func (db *DB) lease(ctx context.Context, tx *sql.Tx, id string) (store.Lease, error) {
	l := store.Lease{ID: id}
	var until int64
	err := tx.QueryRowContext(ctx, db.Q(`SELECT holder, epoch, expires FROM leases WHERE id = ?`+db.D.ForUpdate), id).Scan(&l.Holder, &l.Epoch, &until)
	if errors.Is(err, sql.ErrNoRows) {
		return l, nil
	}
	l.Until = time.Unix(0, until).UTC()
	return l, err
}

// checkLease is the fence of every write of session id: with a lease,
// it must be the current one; without, no live lease may be held.
func (db *DB) checkLease(ctx context.Context, tx *sql.Tx, id string, mine store.Lease, now time.Time) error {
	cur, err := db.lease(ctx, tx, id)
	if err != nil {
		return err
	}
	switch {
	case !mine.IsZero():
		if cur.Holder != mine.Holder || cur.Epoch != mine.Epoch {
			return fmt.Errorf("%w: session %s: the write's lease is epoch %d of %s, the session's is epoch %d of %q", store.ErrFenced, id, mine.Epoch, mine.Holder, cur.Epoch, cur.Holder)
		}
	case cur.Holder != "" && now.Before(cur.Until):
		return &store.ElsewhereError{ID: id, Holder: cur.Holder, Until: cur.Until}
	}
	return nil
}

// noteConversations records who made the record's conversations.
func (db *DB) noteConversations(ctx context.Context, tx *sql.Tx, rec *store.Record) error {
	ids := append([]string{rec.ClaudeSessionID}, rec.PastClaudeSessionIDs...)
	for _, c := range ids {
		if c == "" {
			continue
		}
		if _, err := db.exec(ctx, tx, `INSERT INTO conversations (claude_session_id, session_id, owner) VALUES (?, ?, ?) ON CONFLICT (claude_session_id) DO NOTHING`, c, rec.SessionID, rec.Owner); err != nil {
			return err
		}
	}
	return nil
}

// The rows of the table counts: the open sessions of all, and of an
// owner.
const CountAll = "all"

// CountOwner is the counts row of owner's open sessions.
func CountOwner(owner string) string { return "owner:" + owner }

// bump adds d to the open sessions of all and of owner, in that order.
func (db *DB) bump(ctx context.Context, tx *sql.Tx, owner string, d int) error {
	for _, k := range []string{CountAll, CountOwner(owner)} {
		if _, err := db.exec(ctx, tx, `INSERT INTO counts (name, n) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET n = counts.n + excluded.n`, k, d); err != nil {
			return fmt.Errorf("counting sessions: %w", err)
		}
	}
	return nil
}

// addSpent adds usd to owner's sum ("" none) and the total.
func (db *DB) addSpent(ctx context.Context, tx *sql.Tx, owner string, usd float64) error {
	keys := []string{""}
	if owner != "" {
		keys = append(keys, owner)
	}
	for _, k := range keys {
		if _, err := db.exec(ctx, tx, `INSERT INTO spent (owner, usd) VALUES (?, ?) ON CONFLICT (owner) DO UPDATE SET usd = spent.usd + excluded.usd`, k, usd); err != nil {
			return err
		}
	}
	return nil
}

// encodeRecord is the body column of a record.
func encodeRecord(rec *store.Record) (string, error) {
	b, err := json.Marshal(rec)
	return string(b), err
}

func decodeRecord(body string) (store.Record, error) {
	var rec store.Record
	err := json.Unmarshal([]byte(body), &rec)
	return rec, err
}
