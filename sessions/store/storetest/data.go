package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/registryfile"
)

func testTranscript(t *testing.T, open Opener) {
	s, ctx := open(t), ctxT(t)
	must(t, s.Create(ctx, rec("s1", "alice", "", 1), store.Quota{}), "create")
	appendAt := func(off int64, data string) error {
		return s.AppendTranscript(ctx, store.Chunk{ID: "s1", ClaudeSessionID: "c-s1", Offset: off, Data: []byte(data)}, store.Lease{})
	}
	must(t, appendAt(0, "line1\n"), "append")
	must(t, appendAt(6, "line2\n"), "append")
	must(t, appendAt(0, "line1\n"), "the same append again")
	must(t, appendAt(6, "line2\nline3\n"), "an append that overlaps")
	wantErr(t, appendAt(40, "late\n"), store.ErrGap, "an append past the end")
	must(t, s.AppendTranscript(ctx, store.Chunk{ID: "s1", ClaudeSessionID: "c-other", Data: []byte("other\n")}, store.Lease{}), "another transcript")
	got, err := s.ReadTranscript(ctx, "s1", "c-s1")
	must(t, err, "read")
	if string(got) != "line1\nline2\nline3\n" {
		t.Fatalf("transcript = %q", got)
	}
	if got, _ := s.ReadTranscript(ctx, "s1", "c-none"); got != nil {
		t.Fatalf("a missing transcript reads %q", got)
	}
	wantErr(t, s.AppendTranscript(ctx, store.Chunk{ID: "nope", ClaudeSessionID: "c", Data: []byte("x")}, store.Lease{}), store.ErrNotFound, "append to a missing session")
	must(t, s.CloseSession(ctx, "s1", store.Lease{}), "close")
	// Gone with the session: a tombstone is only what a late writer needs
	// (a closed conversation is resumed from the CLI's own file).
	if got, _ := s.ReadTranscript(ctx, "s1", "c-s1"); got != nil {
		t.Fatalf("a closed session's transcript is kept: %q", got)
	}
	wantErr(t, appendAt(18, "more\n"), store.ErrClosed, "append to a closed session")
}

func entries(texts ...string) []history.Entry {
	var out []history.Entry
	for _, s := range texts {
		out = append(out, history.Entry{Kind: "text", Text: s, Time: base})
	}
	return out
}

func testHistory(t *testing.T, open Opener) {
	s, ctx := open(t), ctxT(t)
	must(t, s.Create(ctx, rec("s1", "alice", "", 1), store.Quota{}), "create")
	must(t, s.AppendHistory(ctx, "s1", 0, entries("a", "b"), store.Lease{}), "append")
	must(t, s.AppendHistory(ctx, "s1", 1, entries("b", "c"), store.Lease{}), "an overlapping append")
	must(t, s.AppendHistory(ctx, "s1", 0, entries("a"), store.Lease{}), "the same append again")
	wantErr(t, s.AppendHistory(ctx, "s1", 5, entries("x"), store.Lease{}), store.ErrGap, "an append past the end")
	got, err := s.ReadHistory(ctx, "s1")
	must(t, err, "read")
	if asJSON(t, got) != asJSON(t, entries("a", "b", "c")) {
		t.Fatalf("history = %s", asJSON(t, got))
	}
}

// next receives the next change, failing after a while.
func next(t *testing.T, ch <-chan store.Change) store.Change {
	t.Helper()
	select {
	case c, ok := <-ch:
		if !ok {
			t.Fatal("the watch ended")
		}
		return c
	case <-time.After(20 * time.Second):
		t.Fatal("no change came")
	}
	return store.Change{}
}

func testWatch(t *testing.T, open Opener) {
	a, b, ctx := open(t), open(t), ctxT(t)
	ch, err := b.Watch(ctx)
	must(t, err, "watch")
	// b's own change comes first and is not reported: the first change b
	// sees is a's.
	must(t, b.Create(ctx, rec("own", "alice", "", 1), store.Quota{}), "create on b")
	must(t, a.Create(ctx, rec("s1", "alice", "", 1), store.Quota{}), "create on a")
	want := []store.Change{{ID: "s1", Kind: store.KindCreated}, {ID: "s1", Kind: store.KindUpdated}, {ID: "s1", Kind: store.KindLease}, {ID: "s1", Kind: store.KindClosed}}
	if c := next(t, ch); c != want[0] {
		t.Fatalf("first change = %+v, want %+v", c, want[0])
	}
	must(t, a.Put(ctx, rec("s1", "alice", "x", 2), store.Lease{}, 0), "put on a")
	if c := next(t, ch); c != want[1] {
		t.Fatalf("change = %+v, want %+v", c, want[1])
	}
	l, _, err := a.Acquire(ctx, "s1", "A", time.Minute)
	must(t, err, "acquire on a")
	if c := next(t, ch); c != want[2] {
		t.Fatalf("change = %+v, want %+v", c, want[2])
	}
	must(t, a.CloseSession(ctx, "s1", l), "close on a")
	if c := next(t, ch); c != want[3] {
		t.Fatalf("change = %+v, want %+v", c, want[3])
	}
}

// populate fills s with a bit of everything an export carries.
func populate(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	for i, id := range []string{"s1", "s2", "s3"} {
		r := rec(id, []string{"alice", "bob", ""}[i], "name "+id, i)
		r.State = []state.State{state.Idle, state.Dormant, state.Failed}[i]
		must(t, s.Create(ctx, r, store.Quota{}), "create")
		must(t, s.Put(ctx, r, store.Lease{}, float64(i)+0.25), "put")
	}
	must(t, s.AppendTranscript(ctx, store.Chunk{ID: "s1", ClaudeSessionID: "c-s1", Data: []byte("{\"type\":\"user\"}\n\xff binary")}, store.Lease{}), "append")
	must(t, s.AppendHistory(ctx, "s1", 0, entries("hello", "world"), store.Lease{}), "append history")
	must(t, s.CloseSession(ctx, "s3", store.Lease{}), "close")
}

func export(t *testing.T, s store.Store) string {
	var buf bytes.Buffer
	must(t, s.Export(ctxT(t), &buf), "export")
	return buf.String()
}

func testExportImport(t *testing.T, open, openOther Opener) {
	src := open(t)
	populate(t, src)
	out := export(t, src)
	lines := bytes.Split(bytes.TrimSpace([]byte(out)), []byte("\n"))
	if len(lines) != 2+1+3 { // two open sessions, a tombstone, sums: total, alice, bob
		t.Fatalf("export has %d lines:\n%s", len(lines), out)
	}
	for _, l := range lines[:2] {
		var head struct{ SessionID, ClaudeSessionID string }
		if err := json.Unmarshal(l, &head); err != nil || head.SessionID == "" || head.ClaudeSessionID == "" {
			t.Fatalf("a session line without sessionId or claudeSessionId: %s", l)
		}
	}
	roundTrip(t, out, openOther(t))
}

// roundTrip imports out into dst twice and checks that dst exports it.
func roundTrip(t *testing.T, out string, dst store.Store) {
	ctx := ctxT(t)
	for range 2 {
		if _, err := dst.Import(ctx, bytes.NewReader([]byte(out))); err != nil {
			t.Fatalf("import: %v", err)
		}
		if got := export(t, dst); got != out {
			t.Fatalf("export after import:\n got %s\nwant %s", got, out)
		}
	}
}

func testImportRegistry(t *testing.T, open Opener) {
	s, ctx := open(t), ctxT(t)
	now := time.Now().UTC()
	data, err := json.Marshal(registryfile.Registry{Version: 3,
		Sessions: []registryfile.Entry{rec("r1", "alice", "one", 1).Entry, rec("r2", "", "two", 2).Entry},
		SpentUSD: 4.5, UserSpentUSD: map[string]float64{"alice": 1.5},
		Closed: registryfile.Tombstones{"gone": {Closed: now, Owner: "bob", ClaudeSessionIDs: []string{"c-gone"}}}})
	must(t, err, "encoding a registry file")
	stats, err := s.Import(ctx, bytes.NewReader(data))
	must(t, err, "import")
	if stats != (store.ImportStats{Sessions: 2, Tombstones: 1, Sums: 2}) {
		t.Fatalf("import read %+v", stats)
	}
	got, err := s.Get(ctx, "r1")
	must(t, err, "get")
	if got.State != state.Dormant || got.Owner != "alice" || got.Options.Name != "one" {
		t.Fatalf("imported record = %s", asJSON(t, got))
	}
	if owner, known, _ := s.ConversationOwner(ctx, "c-gone"); !known || owner != "bob" {
		t.Fatalf("a closed session of the registry file: owner %q, known %v", owner, known)
	}
	if usd, _ := s.Spent(ctx, "alice"); usd != 1.5 {
		t.Fatalf("Spent(alice) = %v", usd)
	}
	if usd, _ := s.SpentTotal(ctx); usd != 4.5 {
		t.Fatalf("SpentTotal = %v", usd)
	}
	p, _ := s.List(ctx, store.Query{})
	if !slices.Equal(ids(p.Records), []string{"r2", "r1"}) {
		t.Fatalf("listed %v", ids(p.Records))
	}
	before := export(t, s)
	_, err = s.Import(ctx, bytes.NewReader(data))
	must(t, err, "import again")
	if after := export(t, s); after != before {
		t.Fatalf("a second import changed the store:\n%s\n%s", before, after)
	}
	counts := func(all, alice int) {
		t.Helper()
		if n, _ := s.Count(ctx, ""); n != all {
			t.Fatalf("Count() = %d, want %d", n, all)
		}
		if n, _ := s.Count(ctx, "alice"); n != alice {
			t.Fatalf("Count(alice) = %d, want %d", n, alice)
		}
	}
	counts(2, 1)
	moved := `{"sessionId":"r2","claudeSessionId":"c-r2","owner":"alice"}` + "\n" // r2 imported with another owner
	_, err = s.Import(ctx, bytes.NewReader([]byte(moved)))
	must(t, err, "import of an owner's change")
	counts(2, 2)
	closed := `{"type":"closed","id":"r1","closed":"2026-03-01T12:00:00Z","owner":"alice"}` + "\n"
	_, err = s.Import(ctx, bytes.NewReader([]byte(closed)))
	must(t, err, "import of a close")
	counts(1, 1)
	_, err = s.Get(ctx, "r1")
	wantErr(t, err, store.ErrClosed, "a session closed by an import")
}

// Tombstones checks what a close leaves (issue 44): a tombstone carries
// the lease's epoch, the session's history and transcripts go, and no
// more than about maxTombstones of them stay, the newest. open opens a
// fresh store that keeps at most maxTombstones.
func Tombstones(t *testing.T, open func(t *testing.T, maxTombstones int) store.Store) {
	const max, closes = 16, 200
	s, ctx := open(t, max), ctxT(t)
	must(t, s.Create(ctx, rec("held", "alice", "", 0), store.Quota{}), "create")
	must(t, s.AppendHistory(ctx, "held", 0, entries("hello"), store.Lease{}), "append history")
	var l store.Lease
	for range 3 {
		var err error
		l, _, err = s.Acquire(ctx, "held", "A", time.Minute)
		must(t, err, "acquire")
		must(t, s.Release(ctx, l), "release")
	}
	l, _, err := s.Acquire(ctx, "held", "A", time.Minute)
	must(t, err, "acquire")
	must(t, s.CloseSession(ctx, "held", l), "close under a lease")
	if h, _ := s.ReadHistory(ctx, "held"); len(h) != 0 {
		t.Fatalf("a closed session's history is kept: %v", h)
	}
	var line struct {
		ID               string   `json:"id"`
		Epoch            int64    `json:"epoch"`
		ClaudeSessionIDs []string `json:"claudeSessionIds"`
	}
	for _, b := range bytes.Split([]byte(export(t, s)), []byte("\n")) {
		if bytes.Contains(b, []byte(`"type":"closed"`)) {
			must(t, json.Unmarshal(b, &line), "a closed line")
		}
	}
	if line.ID != "held" || line.Epoch != l.Epoch || l.Epoch == 0 || !slices.Equal(line.ClaudeSessionIDs, []string{"c-held"}) {
		t.Fatalf("the tombstone exported: %+v; want id held, epoch %d, conversation c-held", line, l.Epoch)
	}
	for i := range closes {
		id := fmt.Sprintf("s%03d", i)
		must(t, s.Create(ctx, rec(id, "alice", "", i+1), store.Quota{}), "create")
		must(t, s.CloseSession(ctx, id, store.Lease{}), "close")
	}
	kept := bytes.Count([]byte(export(t, s)), []byte(`"type":"closed"`))
	if kept < max || kept > 2*max {
		t.Fatalf("%d tombstones kept after %d closes; want about %d", kept, closes+1, max)
	}
	if _, known, _ := s.ConversationOwner(ctx, fmt.Sprintf("c-s%03d", closes-1)); !known {
		t.Fatal("the newest tombstone's conversation is forgotten")
	}
	if _, known, _ := s.ConversationOwner(ctx, "c-s000"); known {
		t.Fatal("the oldest tombstone's conversation is still known past the bound")
	}
	if _, err := s.Get(ctx, fmt.Sprintf("s%03d", closes-1)); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("the newest closed session: %v, want ErrClosed", err)
	}
}
