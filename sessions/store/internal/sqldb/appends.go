package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// AppendTranscript implements store.Store.
func (db *DB) AppendTranscript(ctx context.Context, c store.Chunk, lease store.Lease) error {
	if c.ClaudeSessionID == "" || c.Offset < 0 {
		return fmt.Errorf("appending to a transcript of session %s: no Claude session id, or a negative offset", c.ID)
	}
	return db.Write(ctx, func(tx *sql.Tx, now time.Time) error {
		if err := db.fenced(ctx, tx, c.ID, lease, now); err != nil {
			return err
		}
		var pos, n int64
		err := tx.QueryRowContext(ctx, db.Q(`SELECT pos, length(data) FROM chunks WHERE session_id = ? AND claude_session_id = ? ORDER BY pos DESC LIMIT 1`), c.ID, c.ClaudeSessionID).Scan(&pos, &n)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		size := pos + n
		switch {
		case c.Offset > size:
			return fmt.Errorf("%w: transcript %s of session %s holds %d bytes, the append starts at %d", store.ErrGap, c.ClaudeSessionID, c.ID, size, c.Offset)
		case c.Offset+int64(len(c.Data)) <= size:
			return nil // stored already
		}
		data := c.Data[size-c.Offset:]
		_, err = db.exec(ctx, tx, `INSERT INTO chunks (session_id, claude_session_id, pos, data) VALUES (?, ?, ?, ?)`, c.ID, c.ClaudeSessionID, size, data)
		return err
	})
}

// fenced locks the open session id and checks the writer's lease.
func (db *DB) fenced(ctx context.Context, tx *sql.Tx, id string, lease store.Lease, now time.Time) error {
	if _, err := db.lockRecord(ctx, tx, id); err != nil {
		return err
	}
	return db.checkLease(ctx, tx, id, lease, now)
}

// ReadTranscript implements store.Store.
func (db *DB) ReadTranscript(ctx context.Context, id, claudeSessionID string) ([]byte, error) {
	rows, err := db.SQL.QueryContext(ctx, db.Q(`SELECT data FROM chunks WHERE session_id = ? AND claude_session_id = ? ORDER BY pos`), id, claudeSessionID)
	if err != nil {
		return nil, fmt.Errorf("reading transcript %s of session %s: %w", claudeSessionID, id, err)
	}
	defer rows.Close()
	var out []byte
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, rows.Err()
}

// AppendHistory implements store.Store.
func (db *DB) AppendHistory(ctx context.Context, id string, seq int, entries []history.Entry, lease store.Lease) error {
	if seq < 0 {
		return fmt.Errorf("appending to the history of session %s: a negative sequence number", id)
	}
	return db.Write(ctx, func(tx *sql.Tx, now time.Time) error {
		if err := db.fenced(ctx, tx, id, lease, now); err != nil {
			return err
		}
		var have int
		if err := tx.QueryRowContext(ctx, db.Q(`SELECT coalesce(max(seq) + 1, 0) FROM history WHERE session_id = ?`), id).Scan(&have); err != nil {
			return err
		}
		if seq > have {
			return fmt.Errorf("%w: the history of session %s holds %d entries, the append starts at %d", store.ErrGap, id, have, seq)
		}
		for i := have - seq; i < len(entries); i++ {
			b, err := json.Marshal(entries[i])
			if err != nil {
				return err
			}
			if _, err := db.exec(ctx, tx, `INSERT INTO history (session_id, seq, entry) VALUES (?, ?, ?)`, id, seq+i, string(b)); err != nil {
				return err
			}
		}
		return nil
	})
}

// ReadHistory implements store.Store.
func (db *DB) ReadHistory(ctx context.Context, id string) ([]history.Entry, error) {
	rows, err := db.SQL.QueryContext(ctx, db.Q(`SELECT entry FROM history WHERE session_id = ? ORDER BY seq`), id)
	if err != nil {
		return nil, fmt.Errorf("reading the history of session %s: %w", id, err)
	}
	defer rows.Close()
	var out []history.Entry
	for rows.Next() {
		var s string
		var e history.Entry
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(s), &e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
