package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/registryfile"
)

// The export format: JSON Lines, one JSON object a line, of three kinds.
//
//   - A session (no "type"): its Record as JSON — the stored record's
//     fields, sessionId and claudeSessionId among them, and "state" —,
//     with "transcripts" (each stored transcript, "claudeSessionId" and
//     its bytes as base64 "data") and "history" (the stored entries).
//   - A closed session, "type":"closed": "id", "closed", "epoch" (of its
//     lease then), "owner", "claudeSessionIds": its tombstone, so that
//     ConversationOwner keeps answering and nobody brings it back.
//   - A sum, "type":"spent": "owner" and "usd"; owner "" is the total
//     (what --max-total-budget-usd counts), so budgets survive a move.
//
// Import also reads a registry file (registryfile.Registry's JSON,
// any version): its sessions become dormant records, its tombstones and
// sums lines of the other kinds; its claims are left out (the instances
// that held them restart on the new store).

// SessionLine is a session as exported.
type SessionLine struct {
	Record
	Transcripts []TranscriptData `json:"transcripts,omitempty"`
	History     []history.Entry  `json:"history,omitempty"`
}

// TranscriptData is a stored transcript.
type TranscriptData struct {
	ClaudeSessionID string `json:"claudeSessionId"`
	Data            []byte `json:"data"`
}

// ClosedLine is a tombstone as exported: when, the epoch of the session's
// lease then, and who made its conversations.
type ClosedLine struct {
	Type  string `json:"type"` // "closed"
	ID    string `json:"id"`
	Epoch int64  `json:"epoch,omitempty"`
	registryfile.Tombstone
}

// SpentLine is a sum as exported.
type SpentLine struct {
	Type  string  `json:"type"`  // "spent"
	Owner string  `json:"owner"` // "" is the total
	USD   float64 `json:"usd"`
}

// Line types.
const (
	lineClosed = "closed"
	lineSpent  = "spent"
)

// Restorer is what a backend does with the lines Import reads: each an
// upsert, idempotent.
type Restorer interface {
	RestoreSession(ctx context.Context, l SessionLine) error
	RestoreClosed(ctx context.Context, l ClosedLine) error
	RestoreSpent(ctx context.Context, l SpentLine) error
}

// Export writes JSON Lines: dump calls emit with each line, a
// *SessionLine, *ClosedLine or *SpentLine.
func Export(ctx context.Context, w io.Writer, dump func(emit func(line any) error) error) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	err := dump(func(line any) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch l := line.(type) {
		case *ClosedLine:
			l.Type = lineClosed
		case *SpentLine:
			l.Type = lineSpent
		}
		return enc.Encode(line)
	})
	if err != nil {
		return fmt.Errorf("exporting the store: %w", err)
	}
	return bw.Flush()
}

// Import reads an Export or a registry file from r into rs.
func Import(ctx context.Context, r io.Reader, rs Restorer) (ImportStats, error) {
	var st ImportStats
	dec := json.NewDecoder(bufio.NewReaderSize(r, 64<<10))
	for n := 1; ; n++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return st, nil
		} else if err != nil {
			return st, fmt.Errorf("importing: reading value %d: %w", n, err)
		}
		if err := ctx.Err(); err != nil {
			return st, err
		}
		var head struct {
			Type      string          `json:"type"`
			SessionID *string         `json:"sessionId"`
			Sessions  json.RawMessage `json:"sessions"`
			Version   *int            `json:"version"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return st, fmt.Errorf("importing: value %d is not a JSON object: %w", n, err)
		}
		var err error
		switch {
		case head.Type == "" && head.SessionID == nil && (head.Version != nil || head.Sessions != nil):
			err = importRegistry(ctx, raw, rs, &st)
		default:
			err = importLine(ctx, head.Type, raw, rs, &st)
		}
		if err != nil {
			return st, fmt.Errorf("importing: value %d: %w", n, err)
		}
	}
}

// importLine upserts one line of an export.
func importLine(ctx context.Context, typ string, raw []byte, rs Restorer, st *ImportStats) error {
	switch typ {
	case "":
		var l SessionLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return err
		}
		if l.SessionID == "" {
			return errors.New("a session without a sessionId")
		}
		st.Sessions++
		return rs.RestoreSession(ctx, l)
	case lineClosed:
		var l ClosedLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return err
		}
		if l.ID == "" {
			return errors.New("a closed session without an id")
		}
		st.Tombstones++
		return rs.RestoreClosed(ctx, l)
	case lineSpent:
		var l SpentLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return err
		}
		st.Sums++
		return rs.RestoreSpent(ctx, l)
	}
	return fmt.Errorf("unknown line type %q", typ)
}

// importRegistry upserts a registry file's sessions (as dormant),
// tombstones and sums.
func importRegistry(ctx context.Context, raw []byte, rs Restorer, st *ImportStats) error {
	reg, err := registryfile.Parse(bytes.Clone(raw))
	if err != nil {
		return fmt.Errorf("reading a session registry file: %w", err)
	}
	for _, e := range reg.Sessions {
		st.Sessions++
		if err := rs.RestoreSession(ctx, SessionLine{Record: Record{Entry: e, State: state.Dormant}}); err != nil {
			return fmt.Errorf("session %s: %w", e.SessionID, err)
		}
	}
	ids := make([]string, 0, len(reg.Closed))
	for id := range reg.Closed {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		st.Tombstones++
		if err := rs.RestoreClosed(ctx, ClosedLine{Type: lineClosed, ID: id, Tombstone: reg.Closed[id]}); err != nil {
			return fmt.Errorf("closed session %s: %w", id, err)
		}
	}
	sums := []SpentLine{{Type: lineSpent, USD: reg.SpentUSD}}
	for u, v := range reg.UserSpentUSD {
		if u != "" {
			sums = append(sums, SpentLine{Type: lineSpent, Owner: u, USD: v})
		}
	}
	for _, l := range sums {
		st.Sums++
		if err := rs.RestoreSpent(ctx, l); err != nil {
			return err
		}
	}
	return nil
}
