package sessions

import (
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// Tombstones: a closed session leaves one in the registry, so that no
// instance sharing it brings the session back from its own copy, and so
// that who made its conversations stays known (ConversationOwner). They
// are kept for tombstoneAge and at most maxTombstones of them (each write
// reads and writes the whole file), the oldest dropped first.

const (
	// tombstoneAge is how long a closed session's tombstone is kept: longer
	// than any instance goes without writing the registry, so that none
	// brings the session back from its own copy.
	tombstoneAge = 7 * 24 * time.Hour
	// maxTombstones is how many tombstones are kept at most, the oldest
	// dropped first, so that a long create/close loop does not make every
	// write slower (each write reads and writes the whole file).
	maxTombstones = 2048
)

// tombstone is a closed session: when, whose, and the conversations it
// made.
type tombstone struct {
	Closed           time.Time `json:"closed"`
	Owner            string    `json:"owner,omitempty"`
	ClaudeSessionIDs []string  `json:"claudeSessionIds,omitempty"`
}

// tombstoneMap is the tombstones by session id. It encodes itself, with
// the keys sorted as encoding/json does: without reflection, since it is
// most of the file.
type tombstoneMap map[string]tombstone

// MarshalJSON encodes the tombstones.
func (m tombstoneMap) MarshalJSON() ([]byte, error) {
	ids := slices.Sorted(maps.Keys(m))
	b := make([]byte, 0, len(m)*160)
	b = append(b, '{')
	for i, id := range ids {
		t := m[id]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, id)
		b = append(b, `:{"closed":"`...)
		closed := t.Closed
		if y := closed.Year(); y < 0 || y > 9999 {
			closed = time.Time{} // not a time RFC 3339 can write (nor a close time)
		}
		b = closed.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
		if t.Owner != "" {
			b = append(b, `,"owner":`...)
			b = appendJSONString(b, t.Owner)
		}
		if len(t.ClaudeSessionIDs) > 0 {
			b = append(b, `,"claudeSessionIds":[`...)
			for j, c := range t.ClaudeSessionIDs {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendJSONString(b, c)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// appendJSONString appends s as a JSON string: printable ASCII as it is,
// anything else as encoding/json writes it.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// ConversationOwner reports who made the Claude conversation
// claudeSessionID, as far as the registry knows: the owner of an open
// session that has (or had) it, else of a closed session's tombstone ("" is
// a session made over stdio). known is false when the registry knows no
// session with that conversation.
func (r *Registry) ConversationOwner(claudeSessionID string) (owner string, known bool) {
	if claudeSessionID == "" {
		return "", false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f, _, err := r.readLocked()
	if err != nil {
		r.log.Warn("reading the session registry", "path", r.path, "err", err)
	}
	for _, e := range f.Sessions {
		if e.ClaudeSessionID == claudeSessionID || slices.Contains(e.PastClaudeSessionIDs, claudeSessionID) {
			return e.Owner, true
		}
	}
	for _, t := range f.Closed {
		if slices.Contains(t.ClaudeSessionIDs, claudeSessionID) {
			return t.Owner, true
		}
	}
	return "", false
}

// compactTombstones drops the tombstones older than tombstoneAge, then the
// oldest beyond max, and the claims and generations of closed sessions;
// ClosedHorizon records the latest close time dropped.
func compactTombstones(f *registryFile, now time.Time, max int) {
	drop := func(id string) {
		if at := f.Closed[id].Closed; at.After(f.ClosedHorizon) {
			f.ClosedHorizon = at
		}
		delete(f.Closed, id)
	}
	for id, t := range f.Closed {
		if now.Sub(t.Closed) > tombstoneAge {
			drop(id)
		}
	}
	if n := len(f.Closed) - max; n > 0 {
		ids := make([]string, 0, len(f.Closed))
		for id := range f.Closed {
			ids = append(ids, id)
		}
		slices.SortFunc(ids, func(a, b string) int { return f.Closed[a].Closed.Compare(f.Closed[b].Closed) })
		for _, id := range ids[:n] {
			drop(id)
		}
	}
	for id := range f.Closed {
		delete(f.Live, id)
		delete(f.ClaimGen, id)
	}
}
