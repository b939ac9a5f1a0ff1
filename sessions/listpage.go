package sessions

import (
	"context"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/listing"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// ListPage returns a page of the open sessions, the most recently used
// first, and the next cursor: those held here live, the others as stored.
func (m *Manager) ListPage(ctx context.Context, q store.Query) ([]Info, string, error) {
	if !m.share.Stored() {
		all := m.list()
		infos := make([]Info, len(all))
		for i, s := range all {
			infos[i] = s.Info()
		}
		return listing.Page(infos, q)
	}
	var keep func(Info) bool
	q.State, keep = listing.Stored(q.State)
	page, err := m.share.List(ctx, q)
	out := make([]Info, 0, len(page.Records))
	for _, rec := range page.Records {
		m.mu.Lock()
		s := m.sessions[rec.SessionID]
		m.mu.Unlock()
		in := listing.OfRecord(rec)
		if s != nil {
			in = s.Info()
		}
		if keep(in) {
			out = append(out, in)
		}
	}
	return out, page.Next, err
}
