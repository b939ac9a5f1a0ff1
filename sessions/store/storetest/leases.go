package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

func testLeases(t *testing.T, open Opener) {
	a, b, ctx := open(t), open(t), ctxT(t)
	must(t, a.Create(ctx, rec("s1", "alice", "", 1), store.Quota{}), "create")
	_, _, err := a.Acquire(ctx, "nope", "A", time.Minute)
	wantErr(t, err, store.ErrNotFound, "acquire of a missing session")
	la, lapsed, err := a.Acquire(ctx, "s1", "A", time.Minute)
	must(t, err, "acquire")
	if la.Epoch != 1 || lapsed != "" || la.Holder != "A" {
		t.Fatalf("first lease = %+v, lapsed %q", la, lapsed)
	}
	_, _, err = b.Acquire(ctx, "s1", "B", time.Minute)
	var ew *store.ElsewhereError
	if !errors.As(err, &ew) || ew.Holder != "A" || !errors.Is(err, store.ErrElsewhere) {
		t.Fatalf("acquire of a held lease: %v, want an ElsewhereError naming A", err)
	}
	again, _, err := a.Acquire(ctx, "s1", "A", time.Minute)
	must(t, err, "acquire again")
	if again.Epoch != 1 {
		t.Fatalf("the holder's second acquire moved the epoch to %d", again.Epoch)
	}
	renewed, err := a.Renew(ctx, la, 2*time.Minute)
	must(t, err, "renew")
	if !renewed.Until.After(la.Until) {
		t.Fatalf("renew did not extend the lease: %v then %v", la.Until, renewed.Until)
	}
	wantErr(t, a.Put(ctx, rec("s1", "alice", "", 2), store.Lease{}, 0), store.ErrElsewhere, "put without the lease while held")
	must(t, a.Put(ctx, rec("s1", "alice", "", 2), la, 0), "put under the lease")
	must(t, a.Release(ctx, la), "release")
	wantErr(t, a.Release(ctx, la), store.ErrFenced, "a second release")
	lb, lapsed, err := b.Acquire(ctx, "s1", "B", time.Minute)
	must(t, err, "acquire after a release")
	if lb.Epoch != 2 || lapsed != "" {
		t.Fatalf("lease after a release = %+v, lapsed %q; want epoch 2, no lapsed holder", lb, lapsed)
	}
	must(t, b.Put(ctx, rec("s1", "alice", "", 3), lb, 0), "put under the new lease")
	wantErr(t, a.Put(ctx, rec("s1", "alice", "", 4), la, 0), store.ErrFenced, "put under the released lease")
}

func testFencing(t *testing.T, open Opener) {
	a, b, ctx := open(t), open(t), ctxT(t)
	must(t, a.Create(ctx, rec("s1", "alice", "", 1), store.Quota{}), "create")
	lb, _, err := b.Acquire(ctx, "s1", "B", 300*time.Millisecond)
	must(t, err, "acquire")
	// B pauses past its lease; A takes the session over.
	var la store.Lease
	var lapsed string
	testkit.Until(t, 20*time.Second, "A taking over the lapsed lease", func() bool {
		la, lapsed, err = a.Acquire(ctx, "s1", "A", time.Minute)
		return err == nil
	})
	if lapsed != "B" || la.Epoch != lb.Epoch+1 {
		t.Fatalf("lapsed = %q, epoch %d after %d; want B's lease taken over, the next epoch", lapsed, la.Epoch, lb.Epoch)
	}
	stale := rec("s1", "alice", "stale", 9)
	wantErr(t, b.Put(ctx, stale, lb, 1), store.ErrFenced, "the stale holder's put")
	_, err = b.Renew(ctx, lb, time.Minute)
	wantErr(t, err, store.ErrFenced, "the stale holder's renewal")
	wantErr(t, b.AppendTranscript(ctx, store.Chunk{ID: "s1", ClaudeSessionID: "c-s1", Data: []byte("x")}, lb), store.ErrFenced, "the stale holder's transcript append")
	wantErr(t, b.CloseSession(ctx, "s1", lb), store.ErrFenced, "the stale holder's close")
	if got, _ := a.Get(ctx, "s1"); got.Options.Name == "stale" {
		t.Fatal("the stale write landed")
	}
	if usd, _ := a.SpentTotal(ctx); usd != 0 {
		t.Fatalf("the stale put's cost was added: %v", usd)
	}
	must(t, a.Put(ctx, rec("s1", "alice", "fresh", 10), la, 0), "the new holder's put")
	must(t, a.CloseSession(ctx, "s1", la), "the new holder's close")
}

func testQuotaConcurrent(t *testing.T, open Opener) {
	handles := []store.Store{open(t), open(t)}
	ctx := ctxT(t)
	const limit, tries = 5, 24
	q := store.Quota{UserMaxSessions: limit}
	var wg sync.WaitGroup
	var mu sync.Mutex
	made, refused := 0, 0
	start := make(chan struct{})
	for i := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := handles[i%2].Create(ctx, rec(fmt.Sprintf("q%02d", i), "alice", "", i), q)
			mu.Lock()
			defer mu.Unlock()
			var qe *store.QuotaError
			switch {
			case err == nil:
				made++
			case errors.As(err, &qe) && qe.What == "user sessions":
				refused++
			default:
				t.Errorf("create %d: %v", i, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if made != limit || refused != tries-limit {
		t.Fatalf("%d creates made, %d refused; want exactly %d made", made, refused, limit)
	}
	if n, _ := handles[0].Count(ctx, "alice"); n != limit {
		t.Fatalf("Count = %d, want %d", n, limit)
	}
	must(t, handles[1].Create(ctx, rec("other", "bob", "", 1), q), "another user's create")
	err := handles[0].Create(ctx, rec("total", "carol", "", 1), store.Quota{MaxSessions: limit + 1})
	var qe *store.QuotaError
	if !errors.As(err, &qe) || qe.What != "sessions" || qe.Have != limit+1 {
		t.Fatalf("create over --max-sessions: %v", err)
	}
}

func testBudgets(t *testing.T, open Opener) {
	s, ctx := open(t), ctxT(t)
	must(t, s.Create(ctx, rec("a", "alice", "", 1), store.Quota{}), "create")
	must(t, s.Create(ctx, rec("n", "", "", 1), store.Quota{}), "create")
	must(t, s.Put(ctx, rec("a", "alice", "", 2), store.Lease{}, 1.25), "put")
	must(t, s.Put(ctx, rec("a", "alice", "", 3), store.Lease{}, 0.5), "put")
	must(t, s.Put(ctx, rec("n", "", "", 2), store.Lease{}, 2), "put")
	if usd, err := s.Spent(ctx, "alice"); err != nil || usd != 1.75 {
		t.Fatalf("Spent(alice) = %v, %v; want 1.75", usd, err)
	}
	if usd, err := s.SpentTotal(ctx); err != nil || usd != 3.75 {
		t.Fatalf("SpentTotal = %v, %v; want 3.75", usd, err)
	}
	if usd, _ := s.Spent(ctx, "bob"); usd != 0 {
		t.Fatalf("Spent(bob) = %v", usd)
	}
	must(t, s.CloseSession(ctx, "a", store.Lease{}), "close")
	if usd, _ := s.Spent(ctx, "alice"); usd != 1.75 {
		t.Fatalf("Spent(alice) after a close = %v; closed sessions count", usd)
	}
	var qe *store.QuotaError
	if err := s.Create(ctx, rec("a2", "alice", "", 1), store.Quota{UserBudgetUSD: 1.75}); !errors.As(err, &qe) || qe.What != "user budget" {
		t.Fatalf("create over the user's budget: %v", err)
	}
	must(t, s.Create(ctx, rec("a3", "alice", "", 1), store.Quota{UserBudgetUSD: 2}), "create within the budget")
	if err := s.Create(ctx, rec("b", "bob", "", 1), store.Quota{TotalBudgetUSD: 3.5}); !errors.As(err, &qe) || qe.What != "total budget" {
		t.Fatalf("create over the total budget: %v", err)
	}
}
