// Package sqlite is the embedded store.Store: one SQLite database file
// (WAL mode, through the pure-Go driver modernc.org/sqlite, so the binary
// still builds with CGO_ENABLED=0 everywhere), with no server to run.
//
// Several instances (processes) on one host share it safely: every write
// is a BEGIN IMMEDIATE transaction (one writer at a time, waiting at most
// busyTimeout for the others, never blocked forever by a paused one),
// readers never wait. A commit is in the write-ahead log before it
// returns (synchronous=NORMAL, SQLite's choice for WAL): a crash or SIGKILL
// of the server loses at most the write in flight, which SQLite's own
// recovery rolls back at the next open; a power loss or an operating
// system crash may lose the commits since the last checkpoint (synced to
// disk), never the file's consistency — as the CLI's own transcripts,
// which it does not sync either. No fsync is on a turn's path.
//
// A corrupt file (it is not a database, or PRAGMA quick_check finds
// damage) is moved aside at open (<path>.corrupt-<time>, with its -wal and
// -shm) and the last good state restored: <path>.bak, a copy taken with
// VACUUM INTO after a clean check at an open, at most every BackupEvery;
// what changed after that copy is lost (the same promise as the registry
// file's .bak, which the registry rewrote at every write).
//
// Watch looks at PRAGMA data_version (which changes when another
// connection commits) every Options.WatchEvery, then reads the changes
// table, which every write appends to (kept ten minutes: a handle trims it
// at its first write and every 512th).
package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/internal/sqldb"
)

// Options configures Open; the zero value is the default.
type Options struct {
	// Now is the clock of leases and tombstones; nil is time.Now.
	Now func() time.Time
	// WatchEvery is how often Watch looks at the database; 0 is 100 ms.
	WatchEvery time.Duration
	// BackupEvery is how old <path>.bak may grow before an open takes a
	// new one; 0 is an hour, <0 never.
	BackupEvery time.Duration
	// Recover is what an open does with a damaged file (empty, truncated,
	// not a database): "" refuses it (ErrDamaged, naming the file and its
	// backup), RecoverBackup restores the backup, RecoverFresh starts an
	// empty store; either keeps the damaged file aside (recover.go).
	Recover string
	// MaxTombstones bounds the tombstones kept; 0 is store.MaxTombstones.
	MaxTombstones int
	Log           *slog.Logger
}

const (
	busyTimeout = 10 * time.Second
	changesKept = 10 * time.Minute
	trimEvery   = 512
)

// Store is the embedded store in one file.
type Store struct {
	*sqldb.DB
	path   string
	opts   Options
	origin string       // this handle, in the changes it writes
	notes  atomic.Int64 // changes this handle wrote: every trimEvery-th trims the table
	bg     sync.WaitGroup
}

var _ store.Store = (*Store)(nil)

// DefaultPath is sessions.db in the server's state directory
// (store.StateDir).
func DefaultPath() (string, error) {
	dir, err := store.StateDir()
	return filepath.Join(dir, "sessions.db"), err
}

// Open opens (or creates) the store in the file at path, restoring the
// last good state when it is corrupt, and migrates its schema.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.WatchEvery <= 0 {
		opts.WatchEvery = 100 * time.Millisecond
	}
	if opts.BackupEvery == 0 {
		opts.BackupEvery = time.Hour
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating the store's directory: %w", err)
	}
	s := &Store{path: path, opts: opts, origin: newOrigin()}
	checked, err := s.recover(ctx)
	if err != nil {
		return nil, err
	}
	db, err := openDB(path)
	if err != nil {
		return nil, err
	}
	s.DB = &sqldb.DB{SQL: db, D: s.dialect(), MaxTombstones: opts.MaxTombstones}
	if err := s.Migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening the session store %s: %w", path, err)
	}
	if err := private(path); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening the session store %s: %w", path, err)
	}
	if checked && s.backupDue() {
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			s.backup(context.WithoutCancel(ctx))
		}()
	}
	return s, nil
}

// private makes the store's files the server user's alone (0600): they
// hold prompts and the MCP servers' headers. SQLite creates the -wal and
// -shm files with the database file's mode, so what it makes later is
// private too.
func private(path string) error {
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && fi.Mode().Perm()&0o077 != 0 {
			err = os.Chmod(f, fi.Mode().Perm()&0o700)
		}
		if err != nil {
			return fmt.Errorf("making the store's files private: %w", err)
		}
	}
	return nil
}

// openDB opens the database pool on path.
func openDB(path string) (*sql.DB, error) {
	dsn := path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=cache_size(-256)" +
		fmt.Sprintf("&_pragma=busy_timeout(%d)&_txlock=immediate", busyTimeout.Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("opening the session store %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(time.Minute)
	return db, nil
}

func newOrigin() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close implements store.Store.
func (s *Store) Close() error {
	s.bg.Wait()
	return s.SQL.Close()
}

// dialect is SQLite's: ? placeholders, no row locks (a write transaction
// is BEGIN IMMEDIATE, alone), the process's clock, changes in a table.
func (s *Store) dialect() sqldb.Dialect {
	return sqldb.Dialect{
		Contains: "instr(name, ?) > 0",
		Now: func(context.Context, *sql.Tx) (time.Time, error) {
			return s.opts.Now().Round(0).UTC(), nil
		},
		Notify: func(ctx context.Context, tx *sql.Tx, id string, kind store.Kind) error {
			now := s.opts.Now().UnixNano()
			if _, err := tx.ExecContext(ctx, `INSERT INTO changes (id, kind, origin, at) VALUES (?, ?, ?, ?)`, id, string(kind), s.origin, now); err != nil {
				return err
			}
			if s.notes.Add(1)%trimEvery != 1 {
				return nil
			}
			_, err := tx.ExecContext(ctx, `DELETE FROM changes WHERE at < ?`, now-changesKept.Nanoseconds())
			return err
		},
		Schema: schema,
	}
}

// schema is the DDL of each version.
var schema = [][]string{
	append(sqldb.SchemaV1("INTEGER", "REAL", "BLOB"),
		`CREATE TABLE changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, kind TEXT NOT NULL, origin TEXT NOT NULL, at INTEGER NOT NULL)`),
	sqldb.SchemaV2("INTEGER", " WITHOUT ROWID"),
}

// quickCheck opens the database at path alone and runs PRAGMA
// quick_check (and SQLite's recovery of a hot journal).
func quickCheck(ctx context.Context, path string) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)&_pragma=cache_size(-64)")
	if err != nil {
		return err
	}
	defer db.Close()
	var res string
	if err := db.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&res); err != nil {
		return err
	}
	if res != "ok" {
		return fmt.Errorf("quick_check: %s", res)
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
