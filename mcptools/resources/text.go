package resources

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/state"
)

const (
	// prefix begins the URI of every session's resource.
	prefix   = "claude-agent-mcp://sessions/"
	mimeType = "text/markdown"
)

func transcriptURI(id string) string { return prefix + id + "/transcript" }
func answerURI(id string) string     { return prefix + id + "/answer" }
func diffURI(id string) string       { return prefix + id + "/diff" }

// pageURI is the URI of a transcript's page.
func pageURI(id string, page int) string { return transcriptURI(id) + "?page=" + strconv.Itoa(page) }

// errForeign is parse's error for a URI that is not ours.
var errForeign = errors.New("not a session's resource")

// ref is what a URI of ours names.
type ref struct {
	session string
	answer  bool // the answer, else the transcript
	diff    bool // the worktree's diff, else the transcript
	page    int  // a transcript's or diff's page; 0: the newest (the diff's first)
}

// parse reads a URI of ours: errForeign for another one, a clear
// InvalidParams error for one of ours that is malformed.
func parse(uri string) (ref, error) {
	rest, ok := strings.CutPrefix(uri, prefix)
	if !ok {
		return ref{}, errForeign
	}
	path, query, hasQuery := strings.Cut(rest, "?")
	id, kind, _ := strings.Cut(path, "/")
	var r ref
	switch {
	case id == "" || strings.ContainsAny(id, "/#%"):
		return r, malformed(uri, "no session id")
	case kind == "answer" && !hasQuery:
		return ref{session: id, answer: true}, nil
	case kind != "transcript" && kind != "diff":
		return r, malformed(uri, "it names neither a transcript, an answer nor a diff")
	case !hasQuery:
		return ref{session: id, diff: kind == "diff"}, nil
	}
	v, ok := strings.CutPrefix(query, "page=")
	n, err := strconv.Atoi(v)
	if !ok || err != nil || n < 1 || strconv.Itoa(n) != v {
		return r, malformed(uri, "the page is a whole number from 1, and nothing else follows the ?")
	}
	return ref{session: id, page: n, diff: kind == "diff"}, nil
}

func malformed(uri, why string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("malformed resource URI %q: %s; use %s, %s or %s",
		uri, why, prefix+"{sessionId}/transcript[?page=N]", prefix+"{sessionId}/answer", prefix+"{sessionId}/diff[?page=N]")}
}

// answerText is a session's last answer: the last text Claude wrote after
// the latest prompt or steered message.
func answerText(s *sessions.Session) string {
	all := s.History()
	last := ""
	for i := len(all) - 1; i >= 0 && last == ""; i-- {
		switch all[i].Kind {
		case "text":
			last = all[i].Text
		case "prompt", "steer":
			i = -1 // nothing was answered after it
		}
	}
	i := s.Info()
	var b strings.Builder
	fmt.Fprintf(&b, "# Last answer of session %s\n\n", label(s))
	if last == "" {
		b.WriteString("(No answer yet.)\n")
	} else {
		b.WriteString(last + "\n")
	}
	if i.State == state.Running || i.State == state.Interrupting {
		b.WriteString("\n(A query is running now: its answer comes when its turn ends.)\n")
	}
	return b.String()
}

// label names a session: its name and id, or its id.
func label(s *sessions.Session) string {
	if n := s.Info().Name; n != "" {
		return n + " (" + s.ID + ")"
	}
	return s.ID
}

// transcriptPage renders page (1 the oldest; 0 the newest) of a session's
// history: its entries, oldest first, packed into pages of at most
// pageBytes (an entry longer than that is cut to fit).
func transcriptPage(s *sessions.Session, page, pageBytes int) (string, error) {
	entries := s.History()
	pages := paginate(entries, pageBytes)
	if page == 0 {
		page = len(pages)
	}
	if page > len(pages) {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("page %d of session %s's transcript does not exist: it has %d page(s); read %s for the newest",
			page, s.ID, len(pages), transcriptURI(s.ID))}
	}
	p := pages[page-1]
	var b strings.Builder
	fmt.Fprintf(&b, "# Transcript of session %s, page %d of %d (entries %d–%d of %d)\n\n", label(s), page, len(pages), p.first+1, p.first+len(p.blocks), len(entries))
	if len(entries) == 0 {
		b.WriteString("(Nothing yet: no query has run in this session.)\n\n")
	}
	for _, block := range p.blocks {
		b.WriteString(block)
	}
	if page > 1 {
		fmt.Fprintf(&b, "Earlier: %s\n", pageURI(s.ID, page-1))
	}
	if page < len(pages) {
		fmt.Fprintf(&b, "Later: %s\n", pageURI(s.ID, page+1))
	}
	return b.String(), nil
}

// A page is the rendered entries it holds and the index of its first.
type page struct {
	first  int
	blocks []string
}

// paginate packs the rendered entries into pages of at most pageBytes,
// oldest first: a page ends before the entry that would overflow it, so
// a full page never changes as the history grows. There is at least one
// page.
func paginate(entries []history.Entry, pageBytes int) []page {
	pages := []page{{}}
	size := 0
	for i, e := range entries {
		block := render(e, pageBytes)
		cur := &pages[len(pages)-1]
		if len(cur.blocks) > 0 && size+len(block) > pageBytes {
			pages = append(pages, page{first: i})
			cur, size = &pages[len(pages)-1], 0
		}
		cur.blocks = append(cur.blocks, block)
		size += len(block)
	}
	return pages
}

// render is one entry as markdown, at most max bytes.
func render(e history.Entry, max int) string {
	var s string
	switch e.Kind {
	case "prompt":
		s = "## Prompt\n\n" + e.Text
	case "steer":
		s = "## Message steered into the turn\n\n" + e.Text
	case "tool":
		s = fmt.Sprintf("- Tool `%s`: %s", e.Tool, history.SummarizeInput(e.Input, 300))
		if e.IsError {
			s += " (error)"
		}
		if e.Result != "" {
			s += " → " + strings.ReplaceAll(e.Result, "\n", " ")
		}
	default:
		s = e.Text
	}
	return textcut.Cut(s, max-8) + "\n\n"
}
