// Package storetest is the one test suite of store.Store: every
// backend runs Run against a fresh store of its own.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/options"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/registryfile"
)

// Factory makes a fresh, empty store at each call and returns how to open
// a handle on it; each handle stands for an instance of its own (its own
// connections), and is closed when the test ends.
type Factory func(t *testing.T) (open Opener)

// Opener opens a handle on one store.
type Opener = func(t *testing.T) store.Store

// Run runs the suite.
func Run(t *testing.T, f Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open Opener)
	}{
		{"CreateGet", testCreateGet},
		{"Put", testPut},
		{"CloseTombstone", testClose},
		{"ListPaging", testListPaging},
		{"ListFilters", testListFilters},
		{"ListTemporary", testListTemporary},
		{"Leases", testLeases},
		{"Fencing", testFencing},
		{"QuotaConcurrent", testQuotaConcurrent},
		{"Budgets", testBudgets},
		{"Transcript", testTranscript},
		{"History", testHistory},
		{"Watch", testWatch},
		{"ExportImport", nil},
		{"ImportRegistry", testImportRegistry},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "ExportImport" {
				testExportImport(t, f(t), f(t))
				return
			}
			tc.fn(t, f(t))
		})
	}
}

var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// rec is a record of session id of owner, used at base + used seconds.
func rec(id, owner, name string, used int) store.Record {
	return store.Record{
		Entry: registryfile.Entry{
			SessionID: id, ClaudeSessionID: "c-" + id, Owner: owner, Resumable: true, Model: "sonnet",
			Created: base, LastUsed: base.Add(time.Duration(used) * time.Second),
			Options: options.CreateOptions{Cwd: "/work/" + id, SessionOptions: claudeagent.SessionOptions{Name: name}},
		},
		State: state.Dormant,
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func wantErr(t *testing.T, err, want error, what string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

func testCreateGet(t *testing.T, open Opener) {
	s, ctx := open(t), ctxT(t)
	r := rec("s1", "alice", "first", 1)
	r.PastClaudeSessionIDs = []string{"old-1"}
	must(t, s.Create(ctx, r, store.Quota{}), "create")
	got, err := s.Get(ctx, "s1")
	must(t, err, "get")
	if asJSON(t, got) != asJSON(t, r) {
		t.Fatalf("get:\n got %s\nwant %s", asJSON(t, got), asJSON(t, r))
	}
	_, err = s.Get(ctx, "nope")
	wantErr(t, err, store.ErrNotFound, "get of a missing session")
	wantErr(t, s.Create(ctx, rec("s1", "bob", "", 2), store.Quota{}), store.ErrExists, "create of a taken id")
	for _, c := range []string{"c-s1", "old-1"} {
		owner, known, err := s.ConversationOwner(ctx, c)
		must(t, err, "conversation owner")
		if !known || owner != "alice" {
			t.Fatalf("ConversationOwner(%s) = %q, %v; want alice, true", c, owner, known)
		}
	}
	if _, known, _ := s.ConversationOwner(ctx, "c-none"); known {
		t.Fatal("ConversationOwner of an unknown conversation is known")
	}
}

func testPut(t *testing.T, open Opener) {
	s, ctx := open(t), ctxT(t)
	must(t, s.Create(ctx, rec("s1", "alice", "a", 1), store.Quota{}), "create")
	r := rec("s1", "mallory", "renamed", 5)
	r.Queries, r.CostUSD, r.State, r.ClaudeSessionID = 3, 0.5, state.Idle, "c-new"
	r.PastClaudeSessionIDs = []string{"c-s1"}
	must(t, s.Put(ctx, r, store.Lease{}, 0.5), "put")
	got, err := s.Get(ctx, "s1")
	must(t, err, "get")
	r.Owner = "alice" // an owner never changes
	if asJSON(t, got) != asJSON(t, r) {
		t.Fatalf("after put:\n got %s\nwant %s", asJSON(t, got), asJSON(t, r))
	}
	if owner, _, _ := s.ConversationOwner(ctx, "c-new"); owner != "alice" {
		t.Fatalf("the new conversation's owner is %q", owner)
	}
	wantErr(t, s.Put(ctx, rec("nope", "alice", "", 1), store.Lease{}, 0), store.ErrNotFound, "put of a missing session")
	must(t, s.CloseSession(ctx, "s1", store.Lease{}), "close")
	wantErr(t, s.Put(ctx, r, store.Lease{}, 0), store.ErrClosed, "put of a closed session")
}

func testClose(t *testing.T, open Opener) {
	s, ctx := open(t), ctxT(t)
	r := rec("s1", "alice", "", 1)
	r.PastClaudeSessionIDs = []string{"c-past"}
	must(t, s.Create(ctx, r, store.Quota{}), "create")
	must(t, s.Create(ctx, rec("s2", "alice", "", 2), store.Quota{}), "create")
	must(t, s.CloseSession(ctx, "s1", store.Lease{}), "close")
	_, err := s.Get(ctx, "s1")
	wantErr(t, err, store.ErrClosed, "get of a closed session")
	wantErr(t, s.CloseSession(ctx, "s1", store.Lease{}), store.ErrClosed, "a second close")
	wantErr(t, s.CloseSession(ctx, "nope", store.Lease{}), store.ErrNotFound, "close of a missing session")
	wantErr(t, s.Create(ctx, rec("s1", "alice", "", 3), store.Quota{}), store.ErrExists, "create over a tombstone")
	for _, c := range []string{"c-s1", "c-past"} {
		if owner, known, err := s.ConversationOwner(ctx, c); err != nil || !known || owner != "alice" {
			t.Fatalf("ConversationOwner(%s) of a closed session = %q, %v, %v", c, owner, known, err)
		}
	}
	if n, _ := s.Count(ctx, "alice"); n != 1 {
		t.Fatalf("Count(alice) = %d after a close, want 1", n)
	}
	_, _, err = s.Acquire(ctx, "s1", "A", time.Minute)
	wantErr(t, err, store.ErrClosed, "acquire of a closed session")
}

// ids lists the ids of records.
func ids(rs []store.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.SessionID
	}
	return out
}

// listAll pages through q, page size n, calling between after each page.
func listAll(t *testing.T, s store.Store, q store.Query, between func(page int)) []string {
	t.Helper()
	var all []string
	for page := 0; ; page++ {
		p, err := s.List(ctxT(t), q)
		must(t, err, "list")
		if len(p.Records) > q.Limit && q.Limit > 0 {
			t.Fatalf("a page of %d records, limit %d", len(p.Records), q.Limit)
		}
		all = append(all, ids(p.Records)...)
		if p.Next == "" {
			return all
		}
		if between != nil {
			between(page)
		}
		q.Cursor = p.Next
	}
}

func testListPaging(t *testing.T, open Opener) {
	s, ctx := open(t), ctxT(t)
	var want []string
	for i := range 25 {
		id := fmt.Sprintf("s%02d", i)
		must(t, s.Create(ctx, rec(id, "alice", "", i/2), store.Quota{}), "create") // pairs share a last use
		want = append(want, id)
	}
	slices.Reverse(want) // newest first; within a pair, the greater id first
	got := listAll(t, s, store.Query{Limit: 7}, func(page int) {
		// A session made while paging sorts first: the pages after the
		// cursor do not move.
		must(t, s.Create(ctx, rec(fmt.Sprintf("new%d", page), "alice", "", 100+page), store.Quota{}), "create while paging")
	})
	if !slices.Equal(got, want) {
		t.Fatalf("paged with inserts between pages:\n got %v\nwant %v", got, want)
	}
	p, err := s.List(ctx, store.Query{})
	must(t, err, "list")
	if len(p.Records) != 25+3 || p.Next != "" {
		t.Fatalf("the default page holds %d records (next %q), want all 28", len(p.Records), p.Next)
	}
	if _, err := s.List(ctx, store.Query{Cursor: "garbage!"}); err == nil {
		t.Fatal("a bad cursor was accepted")
	}
	if n, _ := s.Count(ctx, ""); n != 28 {
		t.Fatalf("Count = %d, want 28", n)
	}
}

func testListFilters(t *testing.T, open Opener) {
	s, ctx := open(t), ctxT(t)
	mk := func(id, owner, name string, used int, st state.State) {
		r := rec(id, owner, name, used)
		r.State = st
		must(t, s.Create(ctx, r, store.Quota{}), "create")
	}
	mk("a1", "alice", "build the parser", 1, state.Idle)
	mk("a2", "alice", "review", 2, state.Running)
	mk("a3", "alice", "Parser docs", 3, state.Dormant)
	mk("b1", "bob", "parser fuzz", 4, state.Running)
	mk("b2", "bob", "", 5, state.Failed)
	cases := []struct {
		q    store.Query
		want []string
	}{
		{store.Query{Owner: "alice"}, []string{"a3", "a2", "a1"}},
		{store.Query{State: []state.State{state.Running}}, []string{"b1", "a2"}},
		{store.Query{State: []state.State{state.Idle, state.Failed}}, []string{"b2", "a1"}},
		{store.Query{Name: "parser"}, []string{"b1", "a1"}}, // case-sensitive substring
		{store.Query{Name: "parser", Owner: "bob"}, []string{"b1"}},
		{store.Query{Owner: "carol"}, nil},
		{store.Query{Owner: "alice", Limit: 2}, []string{"a3", "a2", "a1"}},
	}
	for _, c := range cases {
		if got := listAll(t, s, c.q, nil); !slices.Equal(got, c.want) {
			t.Errorf("List(%+v) = %v, want %v", c.q, got, c.want)
		}
	}
	for owner, want := range map[string]int{"alice": 3, "bob": 2, "carol": 0, "": 5} {
		if n, err := s.Count(ctx, owner); err != nil || n != want {
			t.Errorf("Count(%q) = %d, %v; want %d", owner, n, err, want)
		}
	}
}

// testListTemporary: Query.Temporary finds the one-shot queries' records
// only, whatever else holds the text "temporary":true.
func testListTemporary(t *testing.T, open Opener) {
	s, ctx := open(t), ctxT(t)
	mk := func(id, owner string, used int, temporary bool, edit func(r *store.Record)) {
		r := rec(id, owner, "", used)
		r.Temporary = temporary
		if edit != nil {
			edit(&r)
		}
		must(t, s.Create(ctx, r, store.Quota{}), "create")
	}
	mk("t1", "alice", 1, true, nil)
	mk("k1", "alice", 2, false, nil)
	mk("k2", "bob", 3, false, func(r *store.Record) { r.Options.Name = `"temporary":true` })
	mk("k3", "bob", 4, false, func(r *store.Record) {
		r.Options.MCPServers = map[string]json.RawMessage{"x": json.RawMessage(`{"command":"x","temporary":true}`)}
	})
	mk("t2", "bob", 5, true, nil)
	mk("k4", "carol", 6, false, nil)
	mk("t3", "carol", 7, true, func(r *store.Record) { r.State = state.Idle })
	for _, q := range []store.Query{{Temporary: true}, {Temporary: true, Limit: 1}} {
		if got, want := listAll(t, s, q, nil), []string{"t3", "t2", "t1"}; !slices.Equal(got, want) {
			t.Errorf("List(%+v) = %v, want %v", q, got, want)
		}
	}
	if got, want := listAll(t, s, store.Query{Temporary: true, Owner: "bob"}, nil), []string{"t2"}; !slices.Equal(got, want) {
		t.Errorf("List(temporary, bob) = %v, want %v", got, want)
	}
	p, err := s.List(ctx, store.Query{Temporary: true})
	must(t, err, "list")
	for _, r := range p.Records {
		if !r.Temporary {
			t.Errorf("List(temporary) returned %s, not temporary", r.SessionID)
		}
	}
	if got := listAll(t, s, store.Query{}, nil); len(got) != 7 {
		t.Errorf("List() = %v, want all 7", got)
	}
}
