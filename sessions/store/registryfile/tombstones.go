package registryfile

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// Tombstones: a closed session leaves one in the store, so that no
// instance sharing it brings the session back from its own copy, and so
// that who made its conversations stays known (State.ConversationOwner).
// They are kept for TombstoneAge and at most File.MaxTombstones of them
// (each write reads and writes the whole file), the oldest dropped first.

const (
	// TombstoneAge is how long a closed session's tombstone is kept: longer
	// than any instance goes without writing the store, so that none
	// brings the session back from its own copy.
	TombstoneAge = 7 * 24 * time.Hour
	// DefaultMaxTombstones is how many tombstones are kept at most, the oldest
	// dropped first, so that a long create/close loop does not make every
	// write slower (each write reads and writes the whole file).
	DefaultMaxTombstones = 2048
)

// Tombstone is a closed session: when, whose, and the conversations it
// made.
type Tombstone struct {
	Closed           time.Time `json:"closed"`
	Owner            string    `json:"owner,omitempty"`
	Operator         []string  `json:"operator,omitempty"` // options the operator chose (CreateOptions.Operator)
	ClaudeSessionIDs []string  `json:"claudeSessionIds,omitempty"`
}

// Tombstones are the tombstones by session id. It encodes itself, with
// the keys sorted as encoding/json does: without reflection, since it is
// most of the file.
type Tombstones map[string]Tombstone

// MarshalJSON encodes the tombstones.
func (m Tombstones) MarshalJSON() ([]byte, error) {
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

// UnmarshalJSON decodes the tombstones: the form MarshalJSON writes by a
// scan of its own (without reflection, as it is most of the file), any
// other with encoding/json.
func (m *Tombstones) UnmarshalJSON(b []byte) error {
	if out, ok := scanTombstones(b); ok {
		*m = out
		return nil
	}
	var plain map[string]Tombstone
	if err := json.Unmarshal(b, &plain); err != nil {
		return err
	}
	*m = plain
	return nil
}

// scanTombstones reads tombstones in exactly the form MarshalJSON writes
// (no white space, no escapes, the fields in its order); ok is false for
// anything else. encoding/json has checked that b is valid JSON.
func scanTombstones(b []byte) (m Tombstones, ok bool) {
	p := jsonScan{b: b}
	if !p.lit("{") {
		return nil, false
	}
	m = Tombstones{}
	if p.lit("}") {
		return m, p.done()
	}
	for {
		id, ok := p.str()
		if !ok || !p.lit(`:{"closed":`) {
			return nil, false
		}
		closed, ok := p.str()
		if !ok {
			return nil, false
		}
		var t Tombstone
		var err error
		if t.Closed, err = time.Parse(time.RFC3339Nano, closed); err != nil {
			return nil, false
		}
		if p.lit(`,"owner":`) {
			if t.Owner, ok = p.str(); !ok {
				return nil, false
			}
		}
		if p.lit(`,"claudeSessionIds":[`) {
			for {
				c, ok := p.str()
				if !ok {
					return nil, false
				}
				t.ClaudeSessionIDs = append(t.ClaudeSessionIDs, c)
				if p.lit("]") {
					break
				}
				if !p.lit(",") {
					return nil, false
				}
			}
		}
		if !p.lit("}") {
			return nil, false
		}
		m[id] = t
		if p.lit("}") {
			return m, p.done()
		}
		if !p.lit(",") {
			return nil, false
		}
	}
}

// jsonScan reads JSON of a known form.
type jsonScan struct {
	b []byte
	i int
}

// lit consumes s if the input goes on with it.
func (p *jsonScan) lit(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// str consumes a string without escapes.
func (p *jsonScan) str() (string, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", false
	}
	n := bytes.IndexByte(p.b[p.i+1:], '"')
	if n < 0 {
		return "", false
	}
	s := p.b[p.i+1 : p.i+1+n]
	if bytes.IndexByte(s, '\\') >= 0 {
		return "", false
	}
	p.i += n + 2
	return string(s), true
}

func (p *jsonScan) done() bool { return p.i == len(p.b) }

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
// claudeSessionID, as far as f knows: the owner of an open session that
// has (or had) it, else of a closed session's tombstone ("" is a session
// made over stdio). known is false when f knows no session with that
// conversation.
func (f *Registry) ConversationOwner(claudeSessionID string) (owner string, known bool) {
	if claudeSessionID == "" {
		return "", false
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
