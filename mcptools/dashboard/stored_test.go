package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/registryfile"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store/sqlite"
)

// Tests of the list's stored part: the sessions of the store this
// instance does not hold, paged by the store's cursor, filtered by state
// and name, each user's own.

// storedSession is a session put in the store for a test.
type storedSession struct {
	id, owner, name string
	state           state.State
}

// openStore is a SQLite store holding ss, dormant records whose last use
// follows their order (the last one the most recent).
func openStore(tb testing.TB, ss []storedSession) store.Store {
	tb.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(tb.TempDir(), "sessions.db"), sqlite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	var lines bytes.Buffer
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, s := range ss {
		rec := store.Record{State: s.state, Entry: registryfile.Entry{SessionID: s.id, ClaudeSessionID: "c-" + s.id, Owner: s.owner,
			Resumable: true, Created: base, LastUsed: base.Add(time.Duration(i) * time.Second)}}
		rec.Options.Cwd, rec.Options.Name = "/work/"+s.id, s.name
		line, err := json.Marshal(store.SessionLine{Record: rec})
		if err != nil {
			tb.Fatal(err)
		}
		lines.Write(append(line, '\n'))
	}
	if _, err := st.Import(ctx, &lines); err != nil {
		tb.Fatal(err)
	}
	return st
}

// aliceAndBob is 120 sessions of alice's and 30 of bob's, interleaved in
// time (every fifth is bob's); a third of alice's are named alpha-…, and
// every tenth has failed.
func aliceAndBob() []storedSession {
	var ss []storedSession
	for i := range 150 {
		s := storedSession{id: fmt.Sprintf("alice-%03d", i), owner: "alice", name: fmt.Sprintf("beta-%03d", i), state: state.Dormant}
		switch {
		case i%5 == 4:
			s.id, s.owner, s.name = fmt.Sprintf("bob-%03d", i), "bob", fmt.Sprintf("alpha-%03d", i)
		case i%3 == 0:
			s.name = fmt.Sprintf("alpha-%03d", i)
		}
		if i%10 == 0 {
			s.state = state.Failed
		}
		ss = append(ss, s)
	}
	return ss
}

// storedIDs is the ids of ss that keep keeps, the most recently used first.
func storedIDs(ss []storedSession, keep func(storedSession) bool) []string {
	var ids []string
	for _, s := range slices.Backward(ss) {
		if keep(s) {
			ids = append(ids, s.id)
		}
	}
	return ids
}

var (
	storedRowRE = regexp.MustCompile(`<tr data-session="([^"]+)">`)
	nextRE      = regexp.MustCompile(`<a class="next" rel="next" href="([^"]+)">Next page</a>`)
	firstRE     = regexp.MustCompile(`<a class="first" href="([^"]+)">First page</a>`)
	messageRE   = regexp.MustCompile(`<p class="message error">([^<]*)</p>`)
)

// listRead is a page of the list as read: its stored rows and its links.
type listRead struct {
	code        int
	body        string
	ids         []string // the stored rows
	next, first string   // the links' addresses ("": none)
	message     string   // the error message
}

func readList(t *testing.T, c *http.Client, u string) listRead {
	t.Helper()
	code, _, body := get(t, c, u)
	p := listRead{code: code, body: body}
	for _, m := range storedRowRE.FindAllStringSubmatch(body, -1) {
		p.ids = append(p.ids, html.UnescapeString(m[1]))
	}
	if m := nextRE.FindStringSubmatch(body); m != nil {
		p.next = html.UnescapeString(m[1])
	}
	if m := firstRE.FindStringSubmatch(body); m != nil {
		p.first = html.UnescapeString(m[1])
	}
	if m := messageRE.FindStringSubmatch(body); m != nil {
		p.message = html.UnescapeString(m[1])
	}
	return p
}

// follow reads the list from u and follows its Next links to the end; it
// returns the stored rows of every page in order, and how many each page
// had. Every page but the first links to the first.
func follow(t *testing.T, c *http.Client, base, u string) (ids []string, sizes []int) {
	t.Helper()
	for u != "" {
		p := readList(t, c, base+u)
		if p.code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", u, p.code, p.body)
		}
		if (len(sizes) > 0) != (p.first != "") {
			t.Errorf("page %d (%s): First page link %q", len(sizes), u, p.first)
		}
		ids, sizes, u = append(ids, p.ids...), append(sizes, len(p.ids)), p.next
		if len(sizes) > 10 {
			t.Fatalf("the pages do not end: %v", ids)
		}
	}
	return ids, sizes
}

// TestDashboardStoredPages: the list pages the stored sessions by the
// store's cursor, 50 a page, each user's own: alice's pages reach her 120
// exactly once, the most recent first, and none of bob's; bob's his 30 on
// one page; the admin's all 150. The name and state filters narrow the
// list, and the links keep them; a bad state or cursor is refused in the
// page; the rows the script fetches with a cursor are that page; a
// session held here is listed above, not again as stored.
func TestDashboardStoredPages(t *testing.T) {
	ss := aliceAndBob()
	e := newDashHTTP(t, sessions.Config{Store: openStore(t, ss), MaxSessions: 1000})
	alice, _ := e.signIn(t, "alice-secret")
	bob, _ := e.signIn(t, "bob-secret")
	root, _ := e.signIn(t, "root-secret")
	ofAlice := storedIDs(ss, func(s storedSession) bool { return s.owner == "alice" })

	first := readList(t, alice, e.base+"/ui/")
	if len(first.ids) != 50 || first.next == "" || first.first != "" || !slices.Equal(first.ids, ofAlice[:50]) {
		t.Fatalf("alice's first page: %d rows, next %q, first %q; want her 50 most recent and a Next link:\n%v",
			len(first.ids), first.next, first.first, first.ids)
	}
	for user, c := range map[string]*http.Client{"alice": alice, "bob": bob, "root": root} {
		keep := func(s storedSession) bool { return user == "root" || s.owner == user }
		got, sizes := follow(t, c, e.base, "/ui/")
		wantSizes := map[string][]int{"alice": {50, 50, 20}, "bob": {30}, "root": {50, 50, 50}}[user]
		if w := storedIDs(ss, keep); !slices.Equal(got, w) || !slices.Equal(sizes, wantSizes) {
			t.Errorf("%s's pages list %d sessions in pages of %v, want %d in %v:\n got %v\nwant %v", user, len(got), sizes, len(w), wantSizes, got, w)
		}
	}

	// The filters narrow the list; the links keep them.
	alpha := storedIDs(ss, func(s storedSession) bool { return s.owner == "alice" && strings.Contains(s.name, "alpha") })
	if got, _ := follow(t, alice, e.base, "/ui/?name=alpha"); !slices.Equal(got, alpha) {
		t.Errorf("alice's sessions named alpha: %v, want %v", got, alpha)
	}
	failed := storedIDs(ss, func(s storedSession) bool { return s.owner == "alice" && s.state == state.Failed })
	p := readList(t, alice, e.base+"/ui/?state=failed&name=-0")
	failed0 := storedIDs(ss, func(s storedSession) bool {
		return s.owner == "alice" && s.state == state.Failed && strings.Contains(s.name, "-0")
	})
	if !slices.Equal(p.ids, failed0) || len(failed0) == 0 || len(failed0) >= len(failed) {
		t.Errorf("alice's failed sessions with -0 in the name: %v, want %v", p.ids, failed0)
	}
	if !strings.Contains(p.body, `<option value="failed" selected>`) || !strings.Contains(p.body, `name="name" value="-0"`) {
		t.Errorf("the filter form does not show the filters:\n%s", p.body)
	}
	if got, _ := follow(t, alice, e.base, "/ui/?state=dormant"); len(got) != len(ofAlice)-len(failed) || slices.ContainsFunc(got, func(id string) bool { return slices.Contains(failed, id) }) {
		t.Errorf("alice's dormant sessions: %d, want %d without the failed ones", len(got), len(ofAlice)-len(failed))
	}
	withName := readList(t, alice, e.base+"/ui/?name=beta")
	if !strings.Contains(withName.next, "name=beta") || !strings.Contains(withName.next, "cursor=") {
		t.Errorf("the next link drops the filter: %q", withName.next)
	}
	if second := readList(t, alice, e.base+withName.next); !strings.Contains(second.first, "name=beta") || strings.Contains(second.first, "cursor=") {
		t.Errorf("the first page's link: %q", second.first)
	}

	// Refused in the page, never a 500.
	for _, q := range []string{"?state=asleep", "?state=closed&name=x", "?cursor=bogus"} {
		for _, path := range []string{"/ui/", "/ui/rows"} {
			p := readList(t, alice, e.base+path+q)
			if p.code != http.StatusBadRequest || p.message == "" || len(p.ids) != 0 {
				t.Errorf("%s%s: %d, %d rows:\n%s", path, q, p.code, len(p.ids), p.body)
			}
		}
	}
	if p := readList(t, alice, e.base+"/ui/?state=asleep"); !strings.Contains(p.message, "dormant") || !strings.Contains(p.body, `id="rows"`) {
		t.Errorf("a bad state: the page does not name the states (%q):\n%s", p.message, p.body)
	}

	// The rows the script fetches: the page of the cursor.
	second := readList(t, alice, e.base+first.next)
	_, cursor, _ := strings.Cut(first.next, "?")
	rows := readList(t, alice, e.base+"/ui/rows?"+cursor)
	if rows.code != http.StatusOK || !slices.Equal(rows.ids, ofAlice[50:100]) || !slices.Equal(rows.ids, second.ids) || rows.next != second.next {
		t.Errorf("the rows of the second page: %d %v, next %q; want %v, next %q", rows.code, rows.ids, rows.next, second.ids, second.next)
	}
	if strings.Contains(rows.body, "<html") || strings.Contains(rows.body, `class="filter"`) {
		t.Errorf("the rows fragment is a page:\n%s", rows.body)
	}

	// A session held here is listed as open, not again as stored.
	sid := mcptest.CreateSession(t, e.connect(t, "alice-secret", "2025-11-25"))
	held := readList(t, alice, e.base+"/ui/")
	if !strings.Contains(held.body, `class="session" data-session="`+sid+`"`) || slices.Contains(held.ids, sid) {
		t.Errorf("the session held here: listed open %v, as stored %v", strings.Contains(held.body, sid), slices.Contains(held.ids, sid))
	}
	if got, _ := follow(t, alice, e.base, "/ui/"); !slices.Equal(got, ofAlice) {
		t.Errorf("with a session held here, alice's pages list %d stored sessions, want her %d", len(got), len(ofAlice))
	}
}

// BenchmarkDashboardListPage: the list page of one user of two over a
// store of 10,000 sessions: its first page, a later page, and a name
// filter.
func BenchmarkDashboardListPage(b *testing.B) {
	var ss []storedSession
	for i := range 10000 {
		owner := []string{"alice", "bob"}[i%2]
		ss = append(ss, storedSession{id: fmt.Sprintf("%s-%05d", owner, i), owner: owner, name: fmt.Sprintf("n%05d", i), state: state.Dormant})
	}
	e := newDashHTTP(b, sessions.Config{Store: openStore(b, ss)})
	c, _ := e.signIn(b, "alice-secret")
	_, _, body := get(b, c, e.base+"/ui/")
	next := nextRE.FindStringSubmatch(body)
	if next == nil {
		b.Fatalf("no next page:\n%s", body)
	}
	for name, u := range map[string]string{"first": "/ui/", "later": html.UnescapeString(next[1]), "name": "/ui/?name=n09", "no match": "/ui/?name=zz"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if code, _, body := get(b, c, e.base+u); code != http.StatusOK || !strings.Contains(body, "Stored sessions") {
					b.Fatalf("%s: %d", u, code)
				}
			}
		})
	}
}
