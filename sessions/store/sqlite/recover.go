package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"
)

// A damaged store is never taken for an empty one. At open, an existing
// file that is empty, truncated or not a database (PRAGMA quick_check) is
// refused with ErrDamaged, which names the file and its backup, unless the
// operator asks (Options.Recover, --store-recover) to restore the backup
// or to start afresh; either moves the damaged file (and its -wal and
// -shm) aside, never while another process has it open (its WAL's
// shared-memory file is locked: see othersHaveOpen). The backup,
// <path>.bak, is taken at an open at most every BackupEvery, and never over
// one that holds more sessions than the store (a store emptied, or
// restored from an old copy, would overwrite the last good one).

// Recovery choices (Options.Recover).
const (
	RecoverBackup = "backup"
	RecoverFresh  = "fresh"
)

// ErrDamaged is an open's refusal of a damaged store file.
var ErrDamaged = errors.New("the session store is damaged")

// recover checks an existing file (checked: it passed) and, when it is
// damaged, refuses it or recovers it as Options.Recover says.
func (s *Store) recover(ctx context.Context) (checked bool, err error) {
	fi, err := os.Stat(s.path)
	if errors.Is(err, os.ErrNotExist) {
		if s.opts.Recover == RecoverBackup {
			return s.restore(ctx, errors.New("it is missing"))
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("opening the session store %s: %w", s.path, err)
	}
	cerr := errors.New("it is empty (0 bytes)")
	if fi.Size() > 0 {
		cerr = quickCheck(ctx, s.path)
	}
	if cerr == nil {
		return true, nil
	}
	switch s.opts.Recover {
	case RecoverBackup:
		return s.restore(ctx, cerr)
	case RecoverFresh:
		if err := s.moveAside(cerr); err != nil {
			return false, err
		}
		s.opts.Log.Error("the session store was damaged; moved it aside and starting an empty store, as asked (--store-recover fresh)", "path", s.path, "err", cerr)
		return false, nil
	}
	return false, fmt.Errorf("%w: %s: %v; %s. Nothing was changed: restart with --store-recover backup to restore the backup, or --store-recover fresh to start an empty store (either keeps the damaged file aside)",
		ErrDamaged, s.path, cerr, s.backupState(ctx))
}

// restore moves the damaged file aside and copies the backup in its place.
func (s *Store) restore(ctx context.Context, cerr error) (bool, error) {
	bak := s.path + ".bak"
	if berr := quickCheck(ctx, bak); berr != nil {
		return false, fmt.Errorf("%w: %s: %v, and its backup %s cannot be restored: %v; restart with --store-recover fresh to start an empty store", ErrDamaged, s.path, cerr, bak, berr)
	}
	if _, err := os.Stat(s.path); err == nil {
		if err := s.moveAside(cerr); err != nil {
			return false, err
		}
	}
	if err := copyFile(bak, s.path); err != nil {
		return false, fmt.Errorf("restoring the session store %s from %s: %w", s.path, bak, err)
	}
	s.opts.Log.Error("the session store was damaged; restored its backup, as asked (--store-recover backup): what changed after that copy is lost", "path", s.path, "err", cerr, "restored_from", bak)
	return true, nil
}

// moveAside moves the damaged file, its -wal and -shm aside, refusing
// while another process has the store open.
func (s *Store) moveAside(cerr error) error {
	open, err := othersHaveOpen(s.path)
	if err != nil {
		return fmt.Errorf("the session store %s is damaged (%v), and whether another process has it open cannot be told: %w", s.path, cerr, err)
	}
	if open {
		return fmt.Errorf("%w: %s: %v, and another process (an instance sharing it) has it open: it is not moved from under it. Stop the other instances, then restart this one", ErrDamaged, s.path, cerr)
	}
	aside := fmt.Sprintf("%s.damaged-%s", s.path, time.Now().UTC().Format("20060102T150405.000"))
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Rename(s.path+suffix, aside+suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("the session store %s is damaged (%v) and could not be moved aside: %w", s.path, cerr, err)
		}
	}
	s.opts.Log.Warn("moved the damaged session store aside", "path", s.path, "moved_to", aside)
	return nil
}

// backupState says what the backup holds, for the refusal of a damaged
// store.
func (s *Store) backupState(ctx context.Context) string {
	bak := s.path + ".bak"
	fi, err := os.Stat(bak)
	if err != nil {
		return "there is no backup (" + bak + ")"
	}
	n, err := countSessions(ctx, bak)
	if err != nil {
		return fmt.Sprintf("its backup %s cannot be read either (%v)", bak, err)
	}
	return fmt.Sprintf("its backup %s, of %s, holds %d open sessions", bak, fi.ModTime().UTC().Format(time.RFC3339), n)
}

// countSessions counts the open sessions of the database at path, opened
// alone and read-only.
func countSessions(ctx context.Context, path string) (int, error) {
	db, err := sql.Open("sqlite", path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM records`).Scan(&n)
	return n, err
}

// backupDue reports whether <path>.bak is missing or older than
// BackupEvery.
func (s *Store) backupDue() bool {
	if s.opts.BackupEvery < 0 {
		return false
	}
	info, err := os.Stat(s.path + ".bak")
	return err != nil || time.Since(info.ModTime()) > s.opts.BackupEvery
}

// backup copies the database to <path>.bak with VACUUM INTO (a
// consistent copy, readers and writers going on), through a temporary
// file renamed over the old backup, unless the old one holds more
// sessions (then it is kept, and the log says so).
func (s *Store) backup(ctx context.Context) {
	bak, tmp := s.path+".bak", s.path+".bak.tmp"
	_ = os.Remove(tmp)
	if _, err := s.SQL.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		s.opts.Log.Warn("backing up the session store", "path", s.path, "err", err)
		_ = os.Remove(tmp)
		return
	}
	if old, err := countSessions(ctx, bak); err == nil {
		if now, err := countSessions(ctx, tmp); err == nil && now < old && s.opts.Recover != RecoverFresh {
			s.opts.Log.Warn("kept the session store's backup: it holds more open sessions than the store, which may have lost them (move it away to let a new backup replace it)",
				"backup", bak, "backup_sessions", old, "store_sessions", now)
			_ = os.Remove(tmp)
			return
		}
	}
	if err := os.Rename(tmp, bak); err != nil {
		s.opts.Log.Warn("backing up the session store", "path", s.path, "err", err)
	}
}
