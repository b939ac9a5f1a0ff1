package dashboard

import (
	"encoding/json"
	"fmt"
	"html"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/history"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions/worktree"
)

// hostile is what every string of a page's data holds in
// TestDashboardHTMLEscapes: markup, both quotes, an ampersand and what
// would be an event handler once out of an attribute.
const hostile = `<script>alert(1)</script>"'&x onmouseover=alert(2) y='`

// fillHostile sets every exported string of v (through structs, pointers
// and slices) to hostile followed by the field's name.
func fillHostile(v reflect.Value, field string) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString(hostile + field)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			fillHostile(v.Elem(), field)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fillHostile(v.Field(i), f.Name)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			fillHostile(v.Index(i), field)
		}
	}
}

// testRoot is the root the pages are rendered under, as on stdio.
const testRoot = uiPrefix + "/c3RkaW8tcm9vdC0xMjM0"

// hostilePages renders every page and fragment from data whose every
// string is hostile: sessions with all their parts (a worktree, a running
// turn, questions, an owner), the history's kinds, the charts.
func hostilePages() map[string]string {
	base := pageBase{HTTP: true, Admin: true}
	rows := []sessionRow{
		{Worktree: &worktree.Info{ChangedFiles: []string{"", ""}}, Running: true, Cost: 1, Budget: 2, Questions: 1},
		{Queries: 1},
	}
	others := []otherRow{{}}
	query, next, listErr := listQuery{}, "", ""
	charts := []spendChart{{Width: 480, Height: 140, Lines: []spendLine{{}, {}}}}
	history := []history.Entry{{Time: time.Now()}, {}, {}, {}}
	questions := []shownQuestion{{}, {}}
	for _, v := range []any{&base, &rows, &others, &query, &next, &listErr, &charts, &history, &questions} {
		fillHostile(reflect.ValueOf(v).Elem(), "")
	}
	history[0].Kind, history[1].Kind, history[2].Kind, history[3].Kind = "prompt", "tool", "tool", "text"
	history[1].Input = json.RawMessage(`{"command": "` + strings.ReplaceAll(hostile, `"`, `\"`) + `Input"}`)
	history[2].Input = json.RawMessage(hostile + "Input")
	list := listPage{pageBase: base, Rows: rows, Others: others, Query: query, Next: next, Charts: charts}
	refused := listPage{pageBase: base, Rows: rows, Query: query, Error: listErr + "Error"}
	session := sessionPage{pageBase: base, Row: rows[0], Questions: questions, History: history, Older: 1, Newer: 3, Total: 9, From: 1, CanAnswer: true, CanRewind: true}
	rewind := rewindPage{pageBase: base, Session: rows[0].ID, Cwd: rows[0].Cwd, Result: &sessions.RewindResult{Prompt: 2, Files: []string{rows[0].Cwd + "/a", rows[1].Cwd}}}
	rewound := rewind
	rewound.Done = true
	readOnly := session
	readOnly.CanAnswer, readOnly.Row = false, rows[1]
	out := map[string]string{}
	for name, write := range map[string]func(*htmlWriter){
		"error":              errorPage{pageBase: base, Message: hostile + "Message"}.write,
		"signin":             signinPage{pageBase: base, Failed: true, RetryAfter: 7}.write,
		"signed in":          signedIn,
		"list":               list.write,
		"rows":               list.writeRows,
		"list, refused":      refused.write,
		"session":            session.write,
		"panel":              session.writePanel,
		"history":            session.writeHistory,
		"session, read-only": readOnly.write,
		"rewind":             rewind.write,
		"rewound":            rewound.write,
	} {
		w := htmlWriter{root: testRoot}
		write(&w)
		out[name] = w.b.String()
	}
	return out
}

// TestDashboardHTMLEscapes: every value a page interpolates is escaped. Each
// page is rendered from data whose every string is hostile; no <script> of
// the data reaches it, and a strict reading of its tags (every attribute
// double-quoted, no quote or angle bracket inside a value) finds only the
// pages' own tags and attributes: nothing broke out of an attribute or into
// markup. The hostile values are there, as text.
func TestDashboardHTMLEscapes(t *testing.T) {
	pages := hostilePages()
	for name, page := range pages {
		if strings.Contains(page, "<script>") || strings.Contains(page, "alert(1)</script>") {
			t.Errorf("%s: the data's <script> reached the page:\n%s", name, page)
		}
		if err := checkTags(page); err != nil {
			t.Errorf("%s: %v\n%s", name, err, page)
		}
	}
	// What a person must see, as text: a session's name, cwd, owner,
	// prompt, tool input and result, question, and the rest.
	want := map[string][]string{
		"list":          {"Name", "Cwd", "Owner", "Model", "Path", "Branch", "LastStep", "Title", "Label", "Span", "Max", "Limited", "LimitNote"},
		"session":       {"Name", "Owner", "Path", "Text", "Tool", "Result", "Message", "CSRF", "User", "Title", "Input", "Limited", "LimitNote"},
		"error":         {"Message", "Title", "User", "CSRF"},
		"rows":          {"Name", "State", "LastUsed"},
		"list, refused": {"Error"},
	}
	for name, fields := range want {
		for _, f := range fields {
			if !strings.Contains(pages[name], html.EscapeString(hostile+f)) && !strings.Contains(pages[name], html.EscapeString(strings.ReplaceAll(hostile, `"`, `\"`)+f)) {
				t.Errorf("%s: the %s is not shown as text", name, f)
			}
		}
	}
	if cwd := html.EscapeString(hostile + "Cwd"); !strings.Contains(pages["session, read-only"], cwd) {
		t.Errorf("a session page does not show the cwd as text")
	}
}

var (
	tagName  = regexp.MustCompile(`^/?([a-z][a-z0-9]*)`)
	attrName = regexp.MustCompile(`^ ([a-zA-Z][a-zA-Z-]*)`)
	pageTags = strings.Fields(`html head meta title link script body header a span b form input button main
		h1 h2 p div table thead tbody tr th td small section figure figcaption svg rect polyline ul li
		meter dl dt dd pre details summary nav label textarea select option`)
	pageAttrs = strings.Fields(`lang charset name content http-equiv rel href src defer class method action type value
		id data-live data-session data-question data-since colspan viewBox width height role aria-label
		x y fill stroke stroke-width points min max low high optimum autocomplete required autofocus
		placeholder maxlength hidden data-waiting formaction disabled rows selected`)
)

// checkTags reads page's tags strictly and says what is not one of the
// pages' own tags or attributes, what is not double-quoted, and a value
// holding a quote or an angle bracket; links and actions must stay within
// the root, and a script must be the dashboard's own.
func checkTags(page string) error {
	rest, _ := strings.CutPrefix(page, "<!doctype html>")
	for {
		i := strings.IndexByte(rest, '<')
		if i < 0 {
			return textCheck(rest)
		}
		if err := textCheck(rest[:i]); err != nil {
			return err
		}
		m := tagName.FindStringSubmatch(rest[i+1:])
		if m == nil || !slices.Contains(pageTags, m[1]) {
			return fmt.Errorf("a tag not of the pages: %.60q", rest[i:])
		}
		rest = rest[i+1+len(m[0]):]
		attrs := map[string]string{}
		for !strings.HasPrefix(rest, ">") {
			a := attrName.FindStringSubmatch(rest)
			if a == nil || !slices.Contains(pageAttrs, a[1]) {
				return fmt.Errorf("in <%s>, an attribute not of the pages: %.60q", m[1], rest)
			}
			rest = rest[len(a[0]):]
			if v, ok := strings.CutPrefix(rest, `="`); ok {
				end := strings.IndexByte(v, '"')
				if end < 0 || strings.ContainsAny(v[:end], `<>'`) {
					return fmt.Errorf("in <%s>, the value of %s is not quoted or not escaped: %.60q", m[1], a[1], rest)
				}
				attrs[a[1]], rest = v[:end], v[end+1:]
			}
		}
		rest = rest[1:]
		for _, k := range []string{"href", "action", "formaction", "src"} {
			if v, ok := attrs[k]; ok && !strings.HasPrefix(v, testRoot+"/") {
				return fmt.Errorf("<%s %s=%q> leaves the dashboard", m[1], k, v)
			}
		}
		if m[0] == "script" && attrs["src"] != testRoot+"/static/app.js" {
			return fmt.Errorf("a script that is not the dashboard's: %v", attrs)
		}
	}
}

// textCheck: the text between tags holds no '>' (escaped as &gt;) and no
// '&' that does not start an entity.
func textCheck(s string) error {
	if strings.Contains(s, ">") {
		return fmt.Errorf("a '>' in text: %.60q", s)
	}
	for _, after := range strings.Split(s, "&")[1:] {
		if !entity.MatchString("&" + after) {
			return fmt.Errorf("a bare '&' in text: %.60q", "&"+after)
		}
	}
	return nil
}

var entity = regexp.MustCompile(`^&(lt|gt|amp|#34|#39);`)
