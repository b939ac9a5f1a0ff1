package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// BenchSizes are the store sizes Bench measures at.
var BenchSizes = []int{1, 1000, 10000, 100000}

// Bench measures Put, Get, a List page and Create at each of BenchSizes
// records; fresh makes an empty store. Run it with -bench (not in CI):
//
//	go test ./sessions/store/sqlite/ -run '^$' -bench Store -benchtime 2000x
func Bench(b *testing.B, fresh func(b *testing.B) store.Store) {
	for _, n := range BenchSizes {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			s := fresh(b)
			fill(b, s, n)
			benchOps(b, s, n)
		})
	}
}

// fill imports n records of ten owners (one transaction).
func fill(b *testing.B, s store.Store, n int) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := range n {
		r := rec(fmt.Sprintf("bench-%07d", i), fmt.Sprintf("user%d", i%10), fmt.Sprintf("session %d", i), i)
		if err := enc.Encode(store.SessionLine{Record: r}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.Import(context.Background(), &buf); err != nil {
		b.Fatal(err)
	}
}

func benchOps(b *testing.B, s store.Store, n int) {
	ctx := context.Background()
	pick := func() string { return fmt.Sprintf("bench-%07d", rand.IntN(n)) }
	b.Run("Put", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			id := pick()
			r := rec(id, "", "renamed", n+i)
			if err := s.Put(ctx, r, store.Lease{}, 0.01); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Get", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Get(ctx, pick()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ListPage", func(b *testing.B) {
		for b.Loop() {
			p, err := s.List(ctx, store.Query{Limit: 50, Owner: "user0"})
			if err != nil || len(p.Records) == 0 {
				b.Fatal(err)
			}
		}
	})
	b.Run("Create", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			r := rec(fmt.Sprintf("new-%07d", i), "user1", "", n+i)
			if err := s.Create(ctx, r, store.Quota{UserMaxSessions: 1 << 30}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
