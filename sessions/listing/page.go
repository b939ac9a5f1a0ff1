package listing

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/store"
)

// Page pages infos (the sessions of an instance without a store) as
// store.Store.List pages records: the most recently used first,
// filtered by q, from q.Cursor. It returns the page and the next cursor.
func Page(items []Info, q store.Query) (page []Info, next string, err error) {
	var after Info
	if q.Cursor != "" {
		n, id, ok := strings.Cut(q.Cursor, ".")
		u, perr := strconv.ParseInt(n, 10, 64)
		if !ok || perr != nil {
			return nil, "", fmt.Errorf("listing sessions: not a cursor this server gave: %q", q.Cursor)
		}
		after = Info{SessionID: id, LastUsed: time.Unix(0, u)}
	}
	before := func(a, b Info) bool { // a comes before b in the order
		return a.LastUsed.After(b.LastUsed) || (a.LastUsed.Equal(b.LastUsed) && a.SessionID > b.SessionID)
	}
	idx := make([]int, 0, len(items))
	for i, it := range items {
		switch {
		case q.Owner != "" && it.Owner != q.Owner,
			len(q.State) > 0 && !slices.Contains(q.State, it.State),
			q.Name != "" && !strings.Contains(it.Name, q.Name),
			q.Cursor != "" && !before(after, it):
			continue
		}
		idx = append(idx, i)
	}
	slices.SortFunc(idx, func(a, b int) int {
		if before(items[a], items[b]) {
			return -1
		}
		return 1
	})
	limit := q.Limit
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	limit = min(limit, store.MaxLimit)
	if len(idx) > limit {
		last := items[idx[limit-1]]
		idx, next = idx[:limit], fmt.Sprintf("%d.%s", last.LastUsed.UnixNano(), last.SessionID)
	}
	page = make([]Info, len(idx))
	for i, j := range idx {
		page[i] = items[j]
	}
	return page, next, nil
}

// Stored is the state filter want as the store sees it (a live session is
// stored idle), and keep tells which rows of its page want keeps.
func Stored(want []state.State) (stored []state.State, keep func(Info) bool) {
	stored = want
	if len(want) > 0 && !slices.Contains(want, state.Idle) {
		stored = append(slices.Clone(want), state.Idle)
	}
	return stored, func(in Info) bool { return len(want) == 0 || slices.Contains(want, in.State) }
}

// States are the states a listed session can be in, as Info reports them
// (interrupting is reported as running; a closed session is not listed):
// the values a list's state filter takes.
var States = []state.State{state.Starting, state.Queued, state.Idle, state.Running, state.Dormant, state.Refused, state.Failed}

// ParseState is a list's state filter as a caller names it (Query.State):
// "" is none (any state), one of States that state; anything else is an
// error naming the states.
func ParseState(s string) ([]state.State, error) {
	if s == "" {
		return nil, nil
	}
	if !slices.Contains(States, state.State(s)) {
		names := make([]string, len(States))
		for i, st := range States {
			names[i] = string(st)
		}
		return nil, fmt.Errorf("listing sessions: no state %q; the states are %s", s, strings.Join(names, ", "))
	}
	return []state.State{state.State(s)}, nil
}
