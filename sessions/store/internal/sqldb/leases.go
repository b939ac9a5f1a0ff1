package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// Acquire implements store.Store.
func (db *DB) Acquire(ctx context.Context, id, holder string, ttl time.Duration) (store.Lease, string, error) {
	if holder == "" {
		return store.Lease{}, "", fmt.Errorf("acquiring the lease on session %s: no holder", id)
	}
	var out store.Lease
	lapsed := ""
	err := db.Write(ctx, func(tx *sql.Tx, now time.Time) error {
		if _, err := db.lockRecord(ctx, tx, id); err != nil {
			return err
		}
		cur, err := db.lease(ctx, tx, id)
		if err != nil {
			return err
		}
		out = store.Lease{ID: id, Holder: holder, Epoch: cur.Epoch, Until: now.Add(ttl)}
		switch {
		case cur.Holder == holder:
			// its own lease, live or lapsed but not taken: renewed
		case cur.Holder != "" && now.Before(cur.Until):
			return &store.ElsewhereError{ID: id, Holder: cur.Holder, Until: cur.Until}
		default:
			lapsed = cur.Holder // "" when released
			out.Epoch++
		}
		if _, err := db.exec(ctx, tx, `INSERT INTO leases (id, holder, epoch, expires) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, epoch = excluded.epoch, expires = excluded.expires`,
			id, holder, out.Epoch, out.Until.UnixNano()); err != nil {
			return fmt.Errorf("writing the lease on session %s: %w", id, err)
		}
		if cur.Holder == holder {
			return nil
		}
		return db.D.Notify(ctx, tx, id, store.KindLease)
	})
	if err != nil {
		return store.Lease{}, "", err
	}
	return out, lapsed, nil
}

// Renew implements store.Store.
func (db *DB) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	err := db.Write(ctx, func(tx *sql.Tx, now time.Time) error {
		l.Until = now.Add(ttl)
		return db.leaseUpdate(ctx, tx, l, l.Holder, l.Until.UnixNano())
	})
	return l, err
}

// Release implements store.Store.
func (db *DB) Release(ctx context.Context, l store.Lease) error {
	return db.Write(ctx, func(tx *sql.Tx, _ time.Time) error {
		if err := db.leaseUpdate(ctx, tx, l, "", 0); err != nil {
			return err
		}
		return db.D.Notify(ctx, tx, l.ID, store.KindLease)
	})
}

// leaseUpdate sets the holder and expiry of lease l, which must be the
// session's current one (else ErrFenced).
func (db *DB) leaseUpdate(ctx context.Context, tx *sql.Tx, l store.Lease, holder string, expires int64) error {
	res, err := db.exec(ctx, tx, `UPDATE leases SET holder = ?, expires = ? WHERE id = ? AND holder = ? AND epoch = ?`, holder, expires, l.ID, l.Holder, l.Epoch)
	if err != nil {
		return fmt.Errorf("writing the lease on session %s: %w", l.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("%w: session %s, epoch %d of %s", store.ErrFenced, l.ID, l.Epoch, l.Holder)
	}
	return nil
}
