package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// Export implements store.Store: the sessions by id, then the
// tombstones, then the sums.
func (db *DB) Export(ctx context.Context, w io.Writer) error {
	return store.Export(ctx, w, func(emit func(any) error) error {
		if err := db.dumpSessions(ctx, emit); err != nil {
			return err
		}
		if err := db.dumpClosed(ctx, emit); err != nil {
			return err
		}
		rows, err := db.SQL.QueryContext(ctx, `SELECT owner, usd FROM spent ORDER BY owner`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var l store.SpentLine
			if err := rows.Scan(&l.Owner, &l.USD); err != nil {
				return err
			}
			if err := emit(&l); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}

// dumpSessions emits every open session with its transcripts and history,
// a page of ids at a time.
func (db *DB) dumpSessions(ctx context.Context, emit func(any) error) error {
	after := ""
	for {
		var ids []string
		rows, err := db.SQL.QueryContext(ctx, db.Q(`SELECT id FROM records WHERE id > ? ORDER BY id LIMIT 500`), after)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return err
		}
		for _, id := range ids {
			l, err := db.sessionLine(ctx, id)
			if err == nil {
				err = emit(l)
			}
			if err != nil {
				return fmt.Errorf("session %s: %w", id, err)
			}
		}
		after = ids[len(ids)-1]
	}
}

// sessionLine is session id as exported.
func (db *DB) sessionLine(ctx context.Context, id string) (*store.SessionLine, error) {
	rec, err := db.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	l := &store.SessionLine{Record: rec}
	rows, err := db.SQL.QueryContext(ctx, db.Q(`SELECT DISTINCT claude_session_id FROM chunks WHERE session_id = ? ORDER BY claude_session_id`), id)
	if err != nil {
		return nil, err
	}
	var cids []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			rows.Close()
			return nil, err
		}
		cids = append(cids, c)
	}
	rows.Close()
	for _, c := range cids {
		data, err := db.ReadTranscript(ctx, id, c)
		if err != nil {
			return nil, err
		}
		l.Transcripts = append(l.Transcripts, store.TranscriptData{ClaudeSessionID: c, Data: data})
	}
	l.History, err = db.ReadHistory(ctx, id)
	return l, err
}

// dumpClosed emits the tombstones, each with who made its conversations.
func (db *DB) dumpClosed(ctx context.Context, emit func(any) error) error {
	rows, err := db.SQL.QueryContext(ctx, `SELECT t.id, t.closed, t.epoch, c.claude_session_id, c.owner
		FROM tombstones t LEFT JOIN conversations c ON c.session_id = t.id ORDER BY t.id, c.claude_session_id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var l *store.ClosedLine
	for rows.Next() {
		var id string
		var closed, epoch int64
		var claudeID, owner sql.NullString
		if err := rows.Scan(&id, &closed, &epoch, &claudeID, &owner); err != nil {
			return err
		}
		if l == nil || l.ID != id {
			if l != nil {
				if err := emit(l); err != nil {
					return err
				}
			}
			l = &store.ClosedLine{ID: id, Epoch: epoch}
			l.Closed = time.Unix(0, closed).UTC()
		}
		if claudeID.Valid {
			l.Owner = owner.String
			l.ClaudeSessionIDs = append(l.ClaudeSessionIDs, claudeID.String)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if l != nil {
		return emit(l)
	}
	return nil
}

// Import implements store.Store, in one transaction.
func (db *DB) Import(ctx context.Context, r io.Reader) (store.ImportStats, error) {
	var st store.ImportStats
	err := db.Write(ctx, func(tx *sql.Tx, _ time.Time) error {
		rs := &restorer{db: db, tx: tx, counted: map[string]int{}}
		var err error
		if st, err = store.Import(ctx, r, rs); err != nil {
			return err
		}
		for owner, d := range rs.counted { // the open sessions counted once per owner, not per line
			if d != 0 {
				if err := db.bump(ctx, tx, owner, d); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return st, err
}

// restorer upserts imported lines within tx. A session line makes a few
// statements (a look, the upsert, its conversations): the open sessions it
// adds are counted in counted, written once at the end.
type restorer struct {
	db      *DB
	tx      *sql.Tx
	counted map[string]int // owner → open sessions added (or moved away, negative)
}

func (rs *restorer) RestoreSession(ctx context.Context, l store.SessionLine) error {
	db, tx := rs.db, rs.tx
	body, err := encodeRecord(&l.Record)
	if err != nil {
		return err
	}
	{
		var closed bool
		var was sql.NullString
		if err := tx.QueryRowContext(ctx, db.Q(`SELECT EXISTS (SELECT 1 FROM tombstones WHERE id = ?), (SELECT owner FROM records WHERE id = ?)`),
			l.SessionID, l.SessionID).Scan(&closed, &was); err != nil {
			return err
		}
		if closed {
			return nil // closed stays closed
		}
		switch {
		case !was.Valid: // a new session
			rs.counted[l.Owner]++
		case was.String != l.Owner:
			rs.counted[was.String]--
			rs.counted[l.Owner]++
		}
		if _, err := db.exec(ctx, tx, `INSERT INTO records (id, owner, name, state, last_used, body) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, name = excluded.name, state = excluded.state, last_used = excluded.last_used, body = excluded.body`,
			l.SessionID, l.Owner, l.Options.Name, string(l.State), l.LastUsed.UnixNano(), body); err != nil {
			return err
		}
		if err := db.noteConversations(ctx, tx, &l.Record); err != nil {
			return err
		}
		for _, t := range l.Transcripts {
			if _, err := db.exec(ctx, tx, `DELETE FROM chunks WHERE session_id = ? AND claude_session_id = ?`, l.SessionID, t.ClaudeSessionID); err != nil {
				return err
			}
			if _, err := db.exec(ctx, tx, `INSERT INTO chunks (session_id, claude_session_id, pos, data) VALUES (?, ?, 0, ?)`, l.SessionID, t.ClaudeSessionID, t.Data); err != nil {
				return err
			}
		}
		if l.History != nil {
			if err := rs.replaceHistory(ctx, tx, l); err != nil {
				return err
			}
		}
		// No change is announced per session: an instance's watch acts on
		// closes (below) and leases, not on records it does not hold.
		return nil
	}
}

func (rs *restorer) replaceHistory(ctx context.Context, tx *sql.Tx, l store.SessionLine) error {
	if _, err := rs.db.exec(ctx, tx, `DELETE FROM history WHERE session_id = ?`, l.SessionID); err != nil {
		return err
	}
	for i, e := range l.History {
		b, _ := json.Marshal(e)
		if _, err := rs.db.exec(ctx, tx, `INSERT INTO history (session_id, seq, entry) VALUES (?, ?, ?)`, l.SessionID, i, string(b)); err != nil {
			return err
		}
	}
	return nil
}

func (rs *restorer) RestoreClosed(ctx context.Context, l store.ClosedLine) error {
	if err := rs.db.putTombstone(ctx, rs.tx, l.ID, l.Closed, l.Epoch, l.Tombstone); err != nil {
		return err
	}
	return rs.db.D.Notify(ctx, rs.tx, l.ID, store.KindClosed)
}

func (rs *restorer) RestoreSpent(ctx context.Context, l store.SpentLine) error {
	_, err := rs.db.exec(ctx, rs.tx, `INSERT INTO spent (owner, usd) VALUES (?, ?) ON CONFLICT (owner) DO UPDATE SET usd = excluded.usd`, l.Owner, l.USD)
	return err
}
