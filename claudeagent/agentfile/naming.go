package agentfile

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/textcut"
)

// MaxToolNameLen is the longest tool name given to an agent. Tool names
// are made of ASCII letters, digits, '_' and '-' (^[a-zA-Z0-9_-]{1,64}$):
// what the Anthropic API takes for a tool, and within what the go-sdk
// accepts (it also takes '.', and up to 128 characters).
const MaxToolNameLen = 64

// ValidToolName reports whether name matches ^[a-zA-Z0-9_-]{1,64}$.
func ValidToolName(name string) bool {
	if name == "" || len(name) > MaxToolNameLen {
		return false
	}
	return !strings.ContainsFunc(name, invalidToolRune)
}

func invalidToolRune(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
}

// ToolName returns the tool name for an agent name: prefix and name with
// each run of other characters than ASCII letters, digits, '_' and '-'
// replaced by one '_', cut to 64 characters. A name of which nothing but
// '_' and '-' would be left is "agent".
func ToolName(prefix, name string) string {
	if !strings.ContainsFunc(sanitize(name), func(r rune) bool { return r != '_' && r != '-' }) {
		name = "agent"
	}
	s := sanitize(prefix + name)
	return s[:min(len(s), MaxToolNameLen)]
}

// sanitize replaces each run of characters invalid in a tool name by '_'.
func sanitize(s string) string {
	var b strings.Builder
	replaced := false
	for _, r := range s {
		if invalidToolRune(r) {
			if !replaced {
				b.WriteByte('_')
			}
			replaced = true
			continue
		}
		replaced = false
		b.WriteRune(r)
	}
	return b.String()
}

// AssignToolNames sets the ToolName of each agent and returns a warning for
// each name that is not the agent's own. The rules:
//   - an agent's tool name is [ToolName] of the prefix and its name;
//   - tool names are compared without case: two names that differ only in
//     case collide, since some clients and models would confuse them;
//   - reserved names (the built-in tools') are never given;
//   - agents are served in a fixed order: first those whose name needed
//     no change, then the others, each group by name (then by source,
//     higher precedence first, and path); the first gets the name, a later
//     one that collides gets the smallest free suffix _2, _3, … (cut to
//     stay within 64 characters).
//
// So the outcome depends only on the set of agents, not on the order of
// the slice or of the files on disk, and no agent is lost to a collision.
func AssignToolNames(agents []*Agent, prefix string, reserved []string) []Warning {
	taken := map[string]string{} // lowercased tool name → who has it
	for _, r := range reserved {
		taken[strings.ToLower(r)] = fmt.Sprintf("the built-in tool %q", r)
	}
	type item struct {
		a     *Agent
		base  string
		exact bool
	}
	items := make([]item, len(agents))
	for i, a := range agents {
		base := ToolName(prefix, a.Name)
		items[i] = item{a, base, base == prefix+a.Name}
	}
	slices.SortStableFunc(items, func(x, y item) int {
		if x.exact != y.exact {
			if x.exact {
				return -1
			}
			return 1
		}
		return cmp.Or(
			strings.Compare(x.a.Name, y.a.Name),
			-cmp.Compare(x.a.Source, y.a.Source),
			strings.Compare(x.a.Path, y.a.Path),
			cmp.Compare(x.a.Line, y.a.Line))
	})
	var warns []Warning
	for _, it := range items {
		a, name := it.a, it.base
		if who, ok := taken[strings.ToLower(name)]; ok {
			for n := 2; ; n++ {
				suffix := "_" + strconv.Itoa(n)
				cand := name[:min(len(name), MaxToolNameLen-len(suffix))] + suffix
				if _, ok := taken[strings.ToLower(cand)]; !ok {
					warns = append(warns, Warning{Path: a.Path, Line: a.Line, Agent: a.Name,
						Text: fmt.Sprintf("agent %q: tool name %q is taken by %s; its tool is %q", a.Name, name, who, cand)})
					name = cand
					break
				}
			}
		} else if !it.exact {
			warns = append(warns, Warning{Path: a.Path, Line: a.Line, Agent: a.Name,
				Text: fmt.Sprintf("agent %q: its name is not a valid tool name (letters, digits, '_' and '-', at most %d); its tool is %q", a.Name, MaxToolNameLen, name)})
		}
		taken[strings.ToLower(name)] = fmt.Sprintf("agent %q", a.Name)
		a.ToolName = name
	}
	return warns
}

// ellipsis ends a cut description.
const ellipsis = "…"

// CutDescription returns s cut so that it takes at most budget bytes as a
// JSON string (without its quotes), counted as encoding/json writes it,
// which escapes the most ('<' is 6 bytes); a cut text ends on a character
// boundary, without trailing blanks, followed by "…". A budget too small
// for anything gives "".
func CutDescription(s string, budget int) string {
	if jsonLen(s) <= budget {
		return s
	}
	room := budget - jsonLen(ellipsis)
	if room < 0 {
		return ""
	}
	// The longest prefix that fits: its encoded length grows with its
	// length.
	lo, hi := 0, len(s)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if jsonLen(textcut.Prefix(s, mid)) <= room {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return strings.TrimRightFunc(textcut.Prefix(s, lo), unicode.IsSpace) + ellipsis
}

// jsonLen is the length of s as a JSON string, without its quotes.
func jsonLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b) - 2
}

// DescriptionBudget returns how many bytes of JSON a tool's description may
// take for the whole tool to stay within limit bytes (600 for agent
// tools): tool is the tool as it will be listed (any value that encodes as
// a JSON object: name, input schema, annotations, …), its description, if
// any, left out of the count. Pass the result to [CutDescription]. Bytes
// are never fewer than characters, so a tool within limit bytes is within
// limit characters. It fails when the tool without description is already
// over the limit.
func DescriptionBudget(tool any, limit int) (int, error) {
	b, err := json.Marshal(tool)
	if err != nil {
		return 0, fmt.Errorf("encoding the tool: %w", err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
		return 0, errors.New("encoding the tool: not a JSON object")
	}
	size := len(b)
	if raw, ok := obj["description"]; ok {
		var d string
		if json.Unmarshal(raw, &d) != nil {
			return 0, errors.New("encoding the tool: its description is not a string")
		}
		size -= len(raw) - 2
	} else {
		size += len(`"description":""`)
		if len(obj) > 0 {
			size += len(",")
		}
	}
	if size > limit {
		return 0, fmt.Errorf("the tool takes %d bytes of JSON without its description, over the limit of %d", size, limit)
	}
	return limit - size, nil
}
