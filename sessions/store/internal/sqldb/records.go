package sqldb

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/registryfile"
)

// Get implements store.Store.
func (db *DB) Get(ctx context.Context, id string) (store.Record, error) {
	var body string
	err := db.SQL.QueryRowContext(ctx, db.Q(`SELECT body FROM records WHERE id = ?`), id).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		var one int
		if db.SQL.QueryRowContext(ctx, db.Q(`SELECT 1 FROM tombstones WHERE id = ?`), id).Scan(&one) == nil {
			return store.Record{}, fmt.Errorf("%w: session %s", store.ErrClosed, id)
		}
		return store.Record{}, fmt.Errorf("%w: session %s", store.ErrNotFound, id)
	}
	if err != nil {
		return store.Record{}, fmt.Errorf("reading session %s: %w", id, err)
	}
	return decodeRecord(body)
}

// Create implements store.Store.
func (db *DB) Create(ctx context.Context, rec store.Record, q store.Quota) error {
	if rec.SessionID == "" {
		return errors.New("creating a session record: no session id")
	}
	body, err := encodeRecord(&rec)
	if err != nil {
		return err
	}
	return db.Write(ctx, func(tx *sql.Tx, _ time.Time) error {
		if db.D.LockCreate != nil {
			if err := db.D.LockCreate(ctx, tx, rec.Owner); err != nil {
				return err
			}
		}
		var one int
		err := tx.QueryRowContext(ctx, db.Q(`SELECT 1 FROM records WHERE id = ? UNION ALL SELECT 1 FROM tombstones WHERE id = ?`), rec.SessionID, rec.SessionID).Scan(&one)
		switch {
		case err == nil:
			return fmt.Errorf("%w: session %s", store.ErrExists, rec.SessionID)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if err := db.checkQuota(ctx, tx, rec.Owner, q); err != nil {
			return err
		}
		if _, err := db.exec(ctx, tx, `INSERT INTO records (id, owner, name, state, last_used, body) VALUES (?, ?, ?, ?, ?, ?)`,
			rec.SessionID, rec.Owner, rec.Options.Name, string(rec.State), rec.LastUsed.UnixNano(), body); err != nil {
			return fmt.Errorf("creating session %s: %w", rec.SessionID, err)
		}
		if err := db.noteConversations(ctx, tx, &rec); err != nil {
			return err
		}
		if err := db.bump(ctx, tx, rec.Owner, 1); err != nil {
			return err
		}
		return db.D.Notify(ctx, tx, rec.SessionID, store.KindCreated)
	})
}

// checkQuota refuses a create of owner's that q does not allow.
func (db *DB) checkQuota(ctx context.Context, tx *sql.Tx, owner string, q store.Quota) error {
	count := func(query string, args ...any) (float64, error) {
		var n float64
		err := tx.QueryRowContext(ctx, db.Q(query), args...).Scan(&n)
		return n, err
	}
	checks := []struct {
		what  string
		limit float64
		query string
		args  []any
	}{
		{"sessions", float64(q.MaxSessions), `SELECT coalesce(sum(n), 0) FROM counts WHERE name = ?`, []any{CountAll}},
		{"user sessions", float64(q.UserMaxSessions), `SELECT coalesce(sum(n), 0) FROM counts WHERE name = ?`, []any{CountOwner(owner)}},
		{"user budget", q.UserBudgetUSD, `SELECT coalesce(sum(usd), 0) FROM spent WHERE owner = ? AND owner <> ''`, []any{owner}},
		{"total budget", q.TotalBudgetUSD, `SELECT coalesce(sum(usd), 0) FROM spent WHERE owner = ''`, nil},
	}
	for _, c := range checks {
		if c.limit <= 0 {
			continue
		}
		have, err := count(c.query, c.args...)
		if err != nil {
			return fmt.Errorf("counting %s: %w", c.what, err)
		}
		if have >= c.limit {
			return &store.QuotaError{What: c.what, Limit: c.limit, Have: have}
		}
	}
	return nil
}

// Put implements store.Store.
func (db *DB) Put(ctx context.Context, rec store.Record, lease store.Lease, spentUSD float64) error {
	return db.Write(ctx, func(tx *sql.Tx, now time.Time) error {
		owner, err := db.lockRecord(ctx, tx, rec.SessionID)
		if err != nil {
			return err
		}
		if err := db.checkLease(ctx, tx, rec.SessionID, lease, now); err != nil {
			return err
		}
		rec.Owner = owner // a session's owner never changes
		body, err := encodeRecord(&rec)
		if err != nil {
			return err
		}
		if _, err := db.exec(ctx, tx, `UPDATE records SET name = ?, state = ?, last_used = ?, body = ? WHERE id = ?`,
			rec.Options.Name, string(rec.State), rec.LastUsed.UnixNano(), body, rec.SessionID); err != nil {
			return fmt.Errorf("writing session %s: %w", rec.SessionID, err)
		}
		if err := db.noteConversations(ctx, tx, &rec); err != nil {
			return err
		}
		if spentUSD != 0 {
			if err := db.addSpent(ctx, tx, owner, spentUSD); err != nil {
				return err
			}
		}
		return db.D.Notify(ctx, tx, rec.SessionID, store.KindUpdated)
	})
}

// CloseSession implements store.Store.
func (db *DB) CloseSession(ctx context.Context, id string, lease store.Lease) error {
	return db.Write(ctx, func(tx *sql.Tx, now time.Time) error {
		if _, err := db.lockRecord(ctx, tx, id); err != nil {
			return err
		}
		if err := db.checkLease(ctx, tx, id, lease, now); err != nil {
			return err
		}
		cur, err := db.lease(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := db.putTombstone(ctx, tx, id, now, cur.Epoch, registryfile.Tombstone{}); err != nil {
			return err
		}
		if err := db.pruneTombstones(ctx, tx, now.Add(-store.TombstoneAge)); err != nil {
			return err
		}
		return db.D.Notify(ctx, tx, id, store.KindClosed)
	})
}

// putTombstone closes session id at closed, its lease at epoch: a
// tombstone is the id, the time and the epoch, all a late writer needs to
// be refused. Its record, lease, transcripts and history go; who made its
// conversations stays (they are noted as the record is written, and from
// t, an imported tombstone, here) for ConversationOwner.
func (db *DB) putTombstone(ctx context.Context, tx *sql.Tx, id string, closed time.Time, epoch int64, t registryfile.Tombstone) error {
	var owner string
	err := tx.QueryRowContext(ctx, db.Q(`SELECT owner FROM records WHERE id = ?`), id).Scan(&owner)
	switch {
	case err == nil:
		if err := db.bump(ctx, tx, owner, -1); err != nil {
			return err
		}
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	if _, err := db.exec(ctx, tx, `INSERT INTO tombstones (id, closed, epoch) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING`, id, closed.UnixNano(), epoch); err != nil {
		return fmt.Errorf("writing the tombstone of session %s: %w", id, err)
	}
	for _, c := range t.ClaudeSessionIDs {
		if _, err := db.exec(ctx, tx, `INSERT INTO conversations (claude_session_id, session_id, owner) VALUES (?, ?, ?) ON CONFLICT (claude_session_id) DO NOTHING`, c, id, t.Owner); err != nil {
			return err
		}
	}
	for _, table := range []string{"records", "leases"} {
		if _, err := db.exec(ctx, tx, `DELETE FROM `+table+` WHERE id = ?`, id); err != nil {
			return err
		}
	}
	for _, table := range []string{"chunks", "history"} {
		if _, err := db.exec(ctx, tx, `DELETE FROM `+table+` WHERE session_id = ?`, id); err != nil {
			return err
		}
	}
	return nil
}

// pruneEvery is how many closes of a handle go between its counts of the
// tombstones against MaxTombstones (counting is a walk of the index).
const pruneEvery = 256

// pruneTombstones drops the tombstones of sessions closed before horizon
// and, at every pruneEvery-th close, the oldest beyond MaxTombstones, with
// their conversations.
func (db *DB) pruneTombstones(ctx context.Context, tx *sql.Tx, horizon time.Time) error {
	cut := horizon.UnixNano()
	if limit := db.maxTombstones(); db.closes.Add(1)%int64(min(pruneEvery, max(1, limit/8))) == 0 {
		var nth int64
		err := tx.QueryRowContext(ctx, db.Q(`SELECT closed FROM tombstones ORDER BY closed DESC LIMIT 1 OFFSET ?`), limit-1).Scan(&nth)
		switch {
		case err == nil:
			cut = max(cut, nth)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("counting the tombstones: %w", err)
		}
	}
	for _, stmt := range []string{
		`DELETE FROM conversations WHERE session_id IN (SELECT id FROM tombstones WHERE closed < ?)`,
		`DELETE FROM tombstones WHERE closed < ?`,
	} {
		if _, err := db.exec(ctx, tx, stmt, cut); err != nil {
			return fmt.Errorf("dropping old tombstones: %w", err)
		}
	}
	return nil
}

// cursor is a position in List's order.
type cursor struct {
	LastUsed int64  `json:"u"`
	ID       string `json:"i"`
}

func encodeCursor(c cursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.ID == "" {
		return c, fmt.Errorf("listing sessions: not a cursor this store gave: %q", s)
	}
	return c, nil
}

// List implements store.Store.
func (db *DB) List(ctx context.Context, q store.Query) (store.Page, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	limit = min(limit, store.MaxLimit)
	var where []string
	var args []any
	if q.Owner != "" {
		where, args = append(where, "owner = ?"), append(args, q.Owner)
	}
	if len(q.State) > 0 {
		marks := strings.TrimSuffix(strings.Repeat("?, ", len(q.State)), ", ")
		where = append(where, "state IN ("+marks+")")
		for _, s := range q.State {
			args = append(args, string(s))
		}
	}
	if q.Name != "" {
		where, args = append(where, db.D.Contains), append(args, q.Name)
	}
	if q.Temporary {
		// encoding/json writes the field at the top level as this text;
		// within a JSON string its quotes would be escaped. A nested
		// object (an MCP server's raw configuration) may hold it too:
		// the decoded record decides below.
		where, args = append(where, "body LIKE ?"), append(args, `%"temporary":true%`)
	}
	if q.Cursor != "" {
		c, err := decodeCursor(q.Cursor)
		if err != nil {
			return store.Page{}, err
		}
		where = append(where, "(last_used < ? OR (last_used = ? AND id < ?))")
		args = append(args, c.LastUsed, c.LastUsed, c.ID)
	}
	query := `SELECT id, last_used, body FROM records`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY last_used DESC, id DESC LIMIT ?"
	args = append(args, limit+1)
	rows, err := db.SQL.QueryContext(ctx, db.Q(query), args...)
	if err != nil {
		return store.Page{}, fmt.Errorf("listing sessions: %w", err)
	}
	defer rows.Close()
	var page store.Page
	var last cursor
	for n := 0; rows.Next(); n++ {
		var c cursor
		var body string
		if err := rows.Scan(&c.ID, &c.LastUsed, &body); err != nil {
			return store.Page{}, err
		}
		if n == limit {
			page.Next = encodeCursor(last)
			break
		}
		rec, err := decodeRecord(body)
		if err != nil {
			return store.Page{}, fmt.Errorf("listing sessions: session %s: %w", c.ID, err)
		}
		last = c
		if q.Temporary && !rec.Temporary {
			continue
		}
		page.Records = append(page.Records, rec)
	}
	return page, rows.Err()
}

// Count implements store.Store, from the table counts.
func (db *DB) Count(ctx context.Context, owner string) (int, error) {
	key := CountAll
	if owner != "" {
		key = CountOwner(owner)
	}
	var n int
	err := db.SQL.QueryRowContext(ctx, db.Q(`SELECT coalesce(sum(n), 0) FROM counts WHERE name = ?`), key).Scan(&n)
	return n, err
}

// ConversationOwner implements store.Store.
func (db *DB) ConversationOwner(ctx context.Context, claudeSessionID string) (string, bool, error) {
	if claudeSessionID == "" {
		return "", false, nil
	}
	var owner string
	err := db.SQL.QueryRowContext(ctx, db.Q(`SELECT owner FROM conversations WHERE claude_session_id = ?`), claudeSessionID).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return owner, err == nil, err
}

// Spent implements store.Store; owner "" is the total.
func (db *DB) Spent(ctx context.Context, owner string) (float64, error) {
	var usd float64
	err := db.SQL.QueryRowContext(ctx, db.Q(`SELECT coalesce(sum(usd), 0) FROM spent WHERE owner = ?`), owner).Scan(&usd)
	return usd, err
}

// SpentTotal implements store.Store.
func (db *DB) SpentTotal(ctx context.Context) (float64, error) { return db.Spent(ctx, "") }
