package dashboard

import (
	"context"
	"net/http"
	"net/url"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/listing"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// The list's stored part: the sessions the store holds that this instance
// does not (dormant ones, other instances'), read-only, a page at a time
// by the store's cursor (Manager.ListPage), filtered by state and name as
// claude_session_list is.

// storedPageSize is how many stored sessions a page of the list reads.
const storedPageSize = 50

// listQuery is what a list page was opened with: the store's cursor ("":
// the first page) and the filters, carried by its links and by the rows
// the script fetches.
type listQuery struct {
	Cursor, State, Name string
}

func listQueryOf(r *http.Request) listQuery {
	v := r.URL.Query()
	return listQuery{Cursor: v.Get("cursor"), State: v.Get("state"), Name: v.Get("name")}
}

// link is the address of the list page at cursor with q's filters.
func (q listQuery) link(w *htmlWriter, cursor string) string {
	v := url.Values{}
	for _, kv := range [][2]string{{"state", q.State}, {"name", q.Name}, {"cursor", cursor}} {
		if kv[1] != "" {
			v.Set(kv[0], kv[1])
		}
	}
	if len(v) == 0 {
		return w.link("/")
	}
	return w.link("/?" + v.Encode())
}

// stored reads page's stored part for si: page.Query's page of the
// sessions si may see, but those held here (open, listed above), and the
// next cursor; or page.Error, when the query is not one to read.
func (d *Dashboard) stored(ctx context.Context, si *signin, page *listPage, open map[string]bool) {
	q := store.Query{Owner: si.user, Name: page.Query.Name, Cursor: page.Query.Cursor, Limit: storedPageSize}
	if d.admin(si.user) {
		q.Owner = "" // every owner's
	}
	var err error
	if q.State, err = listing.ParseState(page.Query.State); err != nil {
		page.Error = err.Error()
		return
	}
	infos, next, err := d.mgr.ListPage(ctx, q)
	if err != nil {
		page.Error = err.Error() + "; start again from the first page"
		return
	}
	page.Next = next
	for _, e := range infos {
		// Owner "" (stdio, or --http without tokens) is every owner to the
		// store: only the sessions of no user are shown, as
		// claude_session_list does.
		if open[e.SessionID] || !d.visible(si, e.Owner) {
			continue
		}
		page.Others = append(page.Others, otherRow{ID: e.SessionID, Name: e.Name, State: string(e.State), Model: e.Model,
			Cwd: e.Cwd, Owner: e.Owner, LastUsed: e.LastUsed.Local().Format("2006-01-02 15:04"), Cost: e.CostUSD, Queries: e.Queries})
	}
}
