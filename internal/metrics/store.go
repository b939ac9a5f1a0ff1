package metrics

import (
	"context"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// Timed is st with its writes of a session's record (a create, a turn's
// put, a close) timed for store_write_seconds (StoreWrite).
func (m *Metrics) Timed(st store.Store) store.Store { return timedStore{Store: st, m: m} }

type timedStore struct {
	store.Store
	m *Metrics
}

func (t timedStore) Put(ctx context.Context, rec store.Record, l store.Lease, spent float64) error {
	defer t.m.since(time.Now())
	return t.Store.Put(ctx, rec, l, spent)
}

func (t timedStore) Create(ctx context.Context, rec store.Record, q store.Quota) error {
	defer t.m.since(time.Now())
	return t.Store.Create(ctx, rec, q)
}

func (t timedStore) CloseSession(ctx context.Context, id string, l store.Lease) error {
	defer t.m.since(time.Now())
	return t.Store.CloseSession(ctx, id, l)
}

func (m *Metrics) since(start time.Time) { m.StoreWrite(time.Since(start)) }
