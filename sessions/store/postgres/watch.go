package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// Watch implements store.Store: LISTEN on a connection of its own,
// each notification of another handle passed on. A lost connection is
// made again (every second until it succeeds), followed by a KindResync:
// what was notified meanwhile is lost.
func (s *Store) Watch(ctx context.Context) (<-chan store.Change, error) {
	conn, err := s.listen(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan store.Change, 64)
	go func() {
		defer close(out)
		for {
			if !s.relay(ctx, conn, out) {
				return
			}
			conn = s.relisten(ctx)
			if conn == nil {
				return
			}
			select {
			case out <- store.Change{Kind: store.KindResync}:
			case <-ctx.Done():
				conn.Close(context.Background())
				return
			}
		}
	}()
	return out, nil
}

// listen opens a connection listening on the channel.
func (s *Store) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// relisten listens again after a lost connection, until ctx ends (nil).
func (s *Store) relisten(ctx context.Context) *pgx.Conn {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if conn, err := s.listen(ctx); err == nil {
			return conn
		} else {
			s.opts.Log.Warn("listening to the session store's changes again", "err", err)
		}
	}
}

// relay passes notifications on until the connection fails (true) or ctx
// ends (false); it closes conn.
func (s *Store) relay(ctx context.Context, conn *pgx.Conn, out chan<- store.Change) bool {
	defer conn.Close(context.Background())
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return false
			}
			s.opts.Log.Warn("listening to the session store's changes", "err", err)
			return true
		}
		var p payload
		if json.Unmarshal([]byte(n.Payload), &p) != nil || p.Origin == s.origin {
			continue
		}
		select {
		case out <- store.Change{ID: p.ID, Kind: p.Kind}:
		case <-ctx.Done():
			return false
		}
	}
}
