package fakeapi

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Reply describes the answer to one /v1/messages request.
type Reply struct {
	// Status other than 0 and 200 sends an Anthropic error body
	// {"type":"error","error":{"type":...,"message":...}} with that status.
	Status       int
	ErrorMessage string
	// Blocks are the content blocks of the assistant message.
	Blocks []Block
	// StopReason defaults to "tool_use" when a tool_use block is present,
	// else "end_turn".
	StopReason string
	// DeltaDelay is the pause between consecutive text deltas.
	DeltaDelay time.Duration
	// Deltas splits each text block into this many text_delta events
	// (at word boundaries when there are enough words). 0 means 3.
	Deltas int
	// Header holds extra response headers, sent with an error as with a
	// message (the rate-limit headers, say).
	Header map[string]string
}

// Block is one content block of a reply.
type Block struct {
	Type      string // "text", "thinking" or "tool_use"
	Text      string // text
	Thinking  string // thinking
	Signature string // thinking; a fixed fake signature when empty
	ID, Name  string // tool_use; ID defaults to toolu_fake_<n>
	Input     any    // tool_use; marshalled to JSON (json.RawMessage is used as is); nil means {}
}

// FakeSignature is the signature sent for thinking blocks without one.
const FakeSignature = "RmFrZVNpZ25hdHVyZUZvclRoaW5raW5nQmxvY2tzT25seUZvclRlc3Rz"

func (b Block) signature() string {
	if b.Signature != "" {
		return b.Signature
	}
	return FakeSignature
}

// TextReply is a reply with a single text block.
func TextReply(text string) *Reply {
	return &Reply{Blocks: []Block{{Type: "text", Text: text}}}
}

// ErrorReply is an error reply with the given HTTP status.
func ErrorReply(status int, msg string) *Reply {
	return &Reply{Status: status, ErrorMessage: msg}
}

// Keyword behaviour constants.
const (
	SlowDelay     = 500 * time.Millisecond
	SlowDeltas    = 20
	BigTextSize   = 2_000_000
	BigTextDelta  = 64 * 1024
	ThinkingText  = "Let me think about this."
	BashPreamble  = "Running a command."
	WritePreamble = "Writing a file."
)

var (
	errRe   = regexp.MustCompile(`ERR(400|401|404|429|500|529)`)
	slowRe  = regexp.MustCompile(`SLOW(\d*)`)
	limitRe = regexp.MustCompile(`LIMIT\[(\d+)\]`)
)

// DefaultReply returns the keyword-driven reply for r, without the
// bookkeeping of the server: every ERRnnn prompt fails (the server fails
// each only once unless it contains ALWAYS), and every LIMIT[n] prompt is
// refused with a reset n seconds from now (the server's reset is fixed by
// the first request that names it).
func DefaultReply(r *Request) *Reply {
	return keywordReply(r, keywordState{
		fail:  func(string, bool) bool { return true },
		limit: func(_ string, d time.Duration) time.Time { return resetAfter(d) },
	})
}

func (s *Server) defaultReply(r *Request) *Reply {
	return keywordReply(r, keywordState{fail: s.failOnce, limit: s.limitReset, ids: &s.toolSeq})
}

type counter interface{ Add(int64) int64 }

// keywordState is what the keywords remember across requests: which
// ERRnnn prompts failed, when each LIMIT[n] resets, the tool_use ids.
type keywordState struct {
	fail  func(text string, always bool) bool
	limit func(key string, d time.Duration) time.Time
	ids   counter // nil: tool_use ids are left to the server
}

// keywordReply implements the keyword behaviour, looking at the last user
// message of r:
//
//   - model containing "nonexistent": 404 not_found_error.
//   - tool_result blocks: "Tool said: <content>" ("Tool error: <content>"
//     when is_error), for the first tool_result.
//   - ERR400/401/404/429/500/529: that status; once per prompt text unless
//     the text contains ALWAYS.
//   - LIMIT[n]: the account's usage limit, as the API refuses a
//     subscription's request: 429 rate_limit_error with
//     anthropic-ratelimit-unified-status "rejected",
//     anthropic-ratelimit-unified-reset (unix seconds, n seconds after the
//     first request naming it, rounded up to a whole second),
//     anthropic-ratelimit-unified-representative-claim "five_hour" and
//     x-should-retry "false", for every request whose last user text
//     holds it, until that reset has passed; then the reply is as without
//     the keyword. A CLI logged in with an OAuth token
//     (CLAUDE_CODE_OAUTH_TOKEN) reports it as a rate_limit_event with
//     status "rejected" and resetsAt, and ends the turn with an error
//     result (api_error_status 429); with an API key it says only
//     "Request rejected (429)".
//   - LIMITWARN: an answer with the headers of a usage limit nearly
//     reached: status "allowed", 90% of the 5-hour window used
//     (anthropic-ratelimit-unified-5h-utilization and -5h-surpassed-threshold
//     0.9, -5h-reset in an hour): with an OAuth token the CLI reports a
//     rate_limit_event with status "allowed_warning".
//   - TOOL_BASH[cmd]: text "Running a command." + Bash tool_use.
//   - TOOL_WRITE[path|content]: text "Writing a file." + Write tool_use.
//   - TOOL_GREP[pattern]: a Grep tool_use (output_mode content) in the cwd.
//   - TOOL_READ[path]: a Read tool_use.
//   - TOOL_ASK: an AskUserQuestion tool_use asking AskQuestions (the
//     model's clarifying questions).
//   - STRUCTURED[json]: a StructuredOutput tool_use with that JSON object
//     as input: the answer the CLI asks for with --json-schema, which ends
//     the turn (invalid JSON gets the text "STRUCTURED: not JSON").
//   - THINK: a thinking block before the text.
//   - BIGTEXT: a 2,000,000-byte text in ~64 KiB deltas.
//   - ECHO: the user's text.
//   - SLOW / SLOW<n>: "chunk0 " … in 20 (or n) deltas 0.5 s apart.
//   - otherwise "Hello from fake API (n_messages=<n>)" where n counts the
//     user and assistant messages (Request.ConversationLen).
func keywordReply(r *Request, st keywordState) *Reply {
	if strings.Contains(r.Model, "nonexistent") {
		return ErrorReply(404, fmt.Sprintf("model: %s", r.Model))
	}
	if trs := r.LastToolResults(); len(trs) > 0 {
		tr := trs[0]
		if tr.IsError {
			return TextReply("Tool error: " + tr.Content)
		}
		return TextReply("Tool said: " + tr.Content)
	}

	text := r.LastUserText()
	if m := errRe.FindStringSubmatch(text); m != nil {
		if st.fail(text, strings.Contains(text, "ALWAYS")) {
			status, _ := strconv.Atoi(m[1])
			return ErrorReply(status, fmt.Sprintf("fake %d error", status))
		}
	}
	if m := limitRe.FindStringSubmatch(text); m != nil {
		secs, _ := strconv.Atoi(m[1])
		if reset := st.limit(m[0], time.Duration(secs)*time.Second); time.Now().Before(reset) {
			return LimitReply(reset)
		}
	}

	reply := &Reply{}
	if strings.Contains(text, "LIMITWARN") {
		reply.Header = limitWarningHeader()
	}
	if strings.Contains(text, "THINK") {
		reply.Blocks = append(reply.Blocks, Block{Type: "thinking", Thinking: ThinkingText})
	}
	toolID := func() string {
		if st.ids == nil {
			return ""
		}
		return "toolu_fake_" + strconv.FormatInt(st.ids.Add(1), 10)
	}
	if tool := toolReply(text, reply, toolID); tool != nil {
		return tool
	}
	reply.Blocks = append(reply.Blocks, Block{Type: "text", Text: textAnswer(r, text, reply)})
	return reply
}

// AskQuestions are the questions of TOOL_ASK: one taking one of three
// choices, one taking several of three.
var AskQuestions = []map[string]any{
	{"question": "Which database should the service use?", "header": "Database", "multiSelect": false, "options": []map[string]any{
		{"label": "Postgres", "description": "A server, for many writers"},
		{"label": "SQLite", "description": "One file, no server"},
		{"label": "MySQL", "description": "What the old service used"},
	}},
	{"question": "Which features should ship first?", "header": "Features", "multiSelect": true, "options": []map[string]any{
		{"label": "Auth", "description": "Sign-in and tokens"},
		{"label": "Search", "description": "Full-text search"},
		{"label": "Billing", "description": "Invoices and plans"},
	}},
}

// toolReply adds to reply the blocks of TOOL_BASH[…], TOOL_WRITE[…],
// TOOL_GREP[…], TOOL_READ[…], TOOL_ASK or STRUCTURED[…] in text and returns it (or, for STRUCTURED without JSON,
// a text reply instead); nil when text has none of them.
func toolReply(text string, reply *Reply, toolID func() string) *Reply {
	if arg, ok := bracketArg(text, "TOOL_BASH["); ok {
		reply.Blocks = append(reply.Blocks,
			Block{Type: "text", Text: BashPreamble},
			Block{Type: "tool_use", ID: toolID(), Name: "Bash", Input: map[string]any{
				"command":     arg,
				"description": "Run a command",
			}})
		return reply
	}
	if arg, ok := bracketArg(text, "TOOL_WRITE["); ok {
		path, content, _ := strings.Cut(arg, "|")
		reply.Blocks = append(reply.Blocks,
			Block{Type: "text", Text: WritePreamble},
			Block{Type: "tool_use", ID: toolID(), Name: "Write", Input: map[string]any{
				"file_path": path,
				"content":   content,
			}})
		return reply
	}
	if arg, ok := bracketArg(text, "TOOL_GREP["); ok {
		reply.Blocks = append(reply.Blocks, Block{Type: "tool_use", ID: toolID(), Name: "Grep", Input: map[string]any{
			"pattern": arg, "output_mode": "content",
		}})
		return reply
	}
	if arg, ok := bracketArg(text, "TOOL_READ["); ok {
		reply.Blocks = append(reply.Blocks, Block{Type: "tool_use", ID: toolID(), Name: "Read", Input: map[string]any{
			"file_path": arg,
		}})
		return reply
	}
	if strings.Contains(text, "TOOL_ASK") {
		reply.Blocks = append(reply.Blocks, Block{Type: "tool_use", ID: toolID(), Name: "AskUserQuestion", Input: map[string]any{
			"questions": AskQuestions,
		}})
		return reply
	}
	if arg, ok := bracketArg(text, "STRUCTURED["); ok {
		if !json.Valid([]byte(arg)) {
			return TextReply("STRUCTURED: not JSON")
		}
		reply.Blocks = append(reply.Blocks,
			Block{Type: "tool_use", ID: toolID(), Name: "StructuredOutput", Input: json.RawMessage(arg)})
		return reply
	}
	return nil
}

// textAnswer is the text of a reply without tools (BIGTEXT, ECHO, SLOW or
// the greeting), setting reply's deltas to match.
func textAnswer(r *Request, text string, reply *Reply) string {
	switch {
	case strings.Contains(text, "BIGTEXT"):
		out := strings.Repeat("abcdefghij", BigTextSize/10)
		reply.Deltas = (len(out) + BigTextDelta - 1) / BigTextDelta
		return out
	case strings.Contains(text, "ECHO"):
		return text
	case slowRe.MatchString(text):
		n := SlowDeltas
		if m := slowRe.FindStringSubmatch(text); m[1] != "" {
			if v, err := strconv.Atoi(m[1]); err == nil && v > 0 {
				n = v
			}
		}
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "chunk%d ", i)
		}
		reply.Deltas = n
		reply.DeltaDelay = SlowDelay
		return b.String()
	default:
		return fmt.Sprintf("Hello from fake API (n_messages=%d)", r.ConversationLen())
	}
}

// LimitReply is the API's refusal of a request over the account's usage
// limit, which resets at reset (see LIMIT[n] in keywordReply).
func LimitReply(reset time.Time) *Reply {
	return &Reply{Status: 429, ErrorMessage: "fake usage limit reached", Header: map[string]string{
		"anthropic-ratelimit-unified-status":               "rejected",
		"anthropic-ratelimit-unified-reset":                strconv.FormatInt(reset.Unix(), 10),
		"anthropic-ratelimit-unified-representative-claim": "five_hour",
		"x-should-retry":                                   "false",
	}}
}

// limitWarningHeader is what an answer near the usage limit carries (see
// LIMITWARN in keywordReply).
func limitWarningHeader() map[string]string {
	reset := strconv.FormatInt(resetAfter(time.Hour).Unix(), 10)
	return map[string]string{
		"anthropic-ratelimit-unified-status":                 "allowed",
		"anthropic-ratelimit-unified-reset":                  reset,
		"anthropic-ratelimit-unified-representative-claim":   "five_hour",
		"anthropic-ratelimit-unified-5h-utilization":         "0.9",
		"anthropic-ratelimit-unified-5h-surpassed-threshold": "0.9",
		"anthropic-ratelimit-unified-5h-reset":               reset,
	}
}

// resetAfter is the whole second at least d from now: the API's resets
// are unix seconds.
func resetAfter(d time.Duration) time.Time {
	return time.Now().Add(d + time.Second - 1).Truncate(time.Second)
}

// bracketArg finds prefix (ending in "[") in text and returns what follows up
// to the matching "]" (nested brackets are balanced), or to the end of the
// text when there is none.
func bracketArg(text, prefix string) (string, bool) {
	i := strings.Index(text, prefix)
	if i < 0 {
		return "", false
	}
	rest := text[i+len(prefix):]
	depth := 0
	for j := 0; j < len(rest); j++ {
		switch rest[j] {
		case '[':
			depth++
		case ']':
			if depth == 0 {
				return rest[:j], true
			}
			depth--
		}
	}
	return rest, true
}

// splitText splits s into n pieces (fewer if s is short). When s has at least
// n space-separated words the pieces end at word boundaries (so "chunk0
// chunk1 " in 2 pieces is "chunk0 ", "chunk1 "); otherwise it is cut into
// pieces of about equal size without splitting UTF-8 sequences. The pieces
// always concatenate to s. Empty s gives no pieces.
func splitText(s string, n int) []string {
	if s == "" {
		return nil
	}
	if n <= 1 {
		return []string{s}
	}
	words := strings.SplitAfter(s, " ")
	if words[len(words)-1] == "" {
		words = words[:len(words)-1]
	}
	if len(words) >= n {
		out := make([]string, 0, n)
		for k := range n {
			lo, hi := k*len(words)/n, (k+1)*len(words)/n
			out = append(out, strings.Join(words[lo:hi], ""))
		}
		return dropEmpty(out)
	}
	size := (len(s) + n - 1) / n
	out := make([]string, 0, n)
	for len(s) > 0 {
		cut := min(size, len(s))
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

func dropEmpty(in []string) []string {
	out := in[:0]
	for _, p := range in {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
