package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// Watch implements store.Store: every WatchEvery it reads PRAGMA
// data_version on a connection of its own (a cheap look that changes
// when another connection commits), and when it moved, the changes other
// handles wrote since. The changes table is trimmed to the last ten
// minutes along the way; a watcher that fell behind that gets a
// KindResync.
func (s *Store) Watch(ctx context.Context) (<-chan store.Change, error) {
	conn, err := s.SQL.Conn(ctx)
	if err != nil {
		return nil, err
	}
	var last int64
	if err := conn.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM changes`).Scan(&last); err != nil {
		conn.Close()
		return nil, err
	}
	out := make(chan store.Change, 64)
	go func() {
		defer close(out)
		defer conn.Close()
		s.watch(ctx, conn, last, out)
	}()
	return out, nil
}

// watch is Watch's loop.
func (s *Store) watch(ctx context.Context, conn *sql.Conn, last int64, out chan<- store.Change) {
	tick := time.NewTicker(s.opts.WatchEvery)
	defer tick.Stop()
	var version int64 = -1
	trimmed := time.Now()
	for {
		var v int64
		if err := conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
			if ctx.Err() != nil {
				return
			}
			s.opts.Log.Warn("watching the session store", "err", err)
		} else if v != version {
			version = v
			var ok bool
			if last, ok = s.send(ctx, conn, last, out); !ok {
				return
			}
		}
		if time.Since(trimmed) > time.Minute {
			trimmed = time.Now()
			_, _ = s.SQL.ExecContext(ctx, `DELETE FROM changes WHERE at < ?`, s.opts.Now().Add(-changesKept).UnixNano())
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// send reads the changes after last that other handles wrote and sends
// them; ok is false when ctx ended.
func (s *Store) send(ctx context.Context, conn *sql.Conn, last int64, out chan<- store.Change) (int64, bool) {
	var first int64
	if err := conn.QueryRowContext(ctx, `SELECT coalesce(min(seq), 0) FROM changes`).Scan(&first); err == nil && first > last+1 && last > 0 {
		if !deliver(ctx, out, store.Change{Kind: store.KindResync}) {
			return last, false
		}
	}
	rows, err := conn.QueryContext(ctx, `SELECT seq, id, kind, origin FROM changes WHERE seq > ? ORDER BY seq`, last)
	if err != nil {
		return last, ctx.Err() == nil
	}
	var got []store.Change
	for rows.Next() {
		var c store.Change
		var origin string
		if rows.Scan(&last, &c.ID, &c.Kind, &origin) == nil && origin != s.origin {
			got = append(got, c)
		}
	}
	rows.Close()
	for _, c := range got {
		if !deliver(ctx, out, c) {
			return last, false
		}
	}
	return last, true
}

func deliver(ctx context.Context, out chan<- store.Change, c store.Change) bool {
	select {
	case out <- c:
		return true
	case <-ctx.Done():
		return false
	}
}
