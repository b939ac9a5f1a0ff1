package agentfile

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// MaxFileBytes caps an agent file or the operator file, as the CLI caps
// agent files; a larger file is skipped with a warning.
const MaxFileBytes = 1 << 20

// maxNameLen is the CLI's cap on an agent's name, in characters.
const maxNameLen = 256

// ParseAgentFile parses one agent file: YAML front matter between "---"
// lines, then the system prompt. It returns nil and exactly one warning
// when the file is skipped, or the agent and the warnings about fields it
// ignored. The agent's Source is SourceUser; callers set their own.
func ParseAgentFile(path string, data []byte) (*Agent, []Warning) {
	p := &parser{path: path}
	a := p.agentFile(data)
	if a == nil {
		return nil, p.warns[:1]
	}
	return a, p.warns
}

// parser collects the warnings of one file.
type parser struct {
	path  string
	warns []Warning
}

func (p *parser) warn(line int, agent, format string, args ...any) {
	p.warns = append(p.warns, Warning{Path: p.path, Line: line, Agent: agent, Text: fmt.Sprintf(format, args...)})
}

func (p *parser) fail(line int, format string, args ...any) error {
	return Warning{Path: p.path, Line: line, Text: fmt.Sprintf(format, args...)}
}

// agentFile parses an agent file; nil means skipped, with the reason as the
// first warning (and no other).
func (p *parser) agentFile(data []byte) *Agent {
	name := "" // once known
	skip := func(line int, format string, args ...any) *Agent {
		p.warns = []Warning{{Path: p.path, Line: line, Agent: name, Text: "skipped: " + fmt.Sprintf(format, args...)}}
		return nil
	}
	if len(data) > MaxFileBytes {
		return skip(0, "larger than %d bytes", MaxFileBytes)
	}
	if !utf8.Valid(data) {
		return skip(0, "not UTF-8 text")
	}
	fm, body, bodyLine, err := splitFrontMatter(string(data))
	if err != nil {
		return skip(err.line, "%s", err.text)
	}
	root, yerr := parseYAML(fm, 2, true)
	if yerr != nil {
		return skip(yerr.line, "invalid YAML front matter: %s", yerr.text)
	}
	if root != nil && root.Kind != yaml.MappingNode {
		return skip(root.Line, "the front matter is not a mapping of fields")
	}
	fields, dup := mappingFields(root)
	if dup != nil {
		return skip(dup.Line, "field %q appears twice in the front matter", dup.Value)
	}
	a := &Agent{Source: SourceUser, Path: p.path}
	n, line, msg := agentName(fields, 1)
	if msg != "" {
		return skip(line, "%s", msg)
	}
	name = n
	a.Name, a.Line = name, line
	desc, line, msg := requiredString(fields, "description", 1)
	if msg != "" {
		return skip(line, "%s", msg)
	}
	// The CLI reads a written "\n" in a description as a line break.
	if a.Description = p.visibleDescription(strings.ReplaceAll(desc, `\n`, "\n"), line, name); a.Description == "" {
		return skip(line, "field \"description\" has no visible text")
	}
	if line, msg := unloadable(fields); msg != "" {
		return skip(line, "%s", msg)
	}
	a.Prompt = strings.TrimSpace(body)
	if a.Prompt == "" {
		// The CLI 2.1.197 refuses an empty prompt in --agents, and with it
		// every agent of the flag.
		return skip(bodyLine, "the system prompt (the text after the front matter) is empty")
	}
	p.optionalFields(fieldContext{agent: a}, fields, "name", "description")
	return a
}

// frontMatterError is a problem with the delimiters.
type frontMatterError struct {
	line int
	text string
}

// splitFrontMatter returns the front matter (which starts on line 2) and
// the body with the line it starts on. It accepts a UTF-8 BOM and CRLF line
// ends, and "---" lines with trailing blanks, as the CLI does.
func splitFrontMatter(s string) (fm, body string, bodyLine int, err *frontMatterError) {
	s = strings.TrimPrefix(s, "\uFEFF")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	first, rest, _ := strings.Cut(s, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		return "", "", 0, &frontMatterError{1, `no front matter: an agent file starts with a "---" line, then name and description`}
	}
	line := 2
	for off := 0; off <= len(rest); {
		end := strings.IndexByte(rest[off:], '\n')
		next := len(rest) + 1
		if end >= 0 {
			end += off
			next = end + 1
		} else {
			end = len(rest)
		}
		if strings.TrimRight(rest[off:end], " \t") == "---" {
			if next > len(rest) {
				return rest[:off], "", line + 1, nil
			}
			return rest[:off], rest[next:], line + 1, nil
		}
		off = next
		line++
	}
	return "", "", 0, &frontMatterError{1, `the front matter is not terminated: no closing "---" line`}
}

// requiredString returns a required non-empty string field, or why it is
// missing (at the line of the field, or at line missing when absent).
func requiredString(fs fieldList, key string, missing int) (string, int, string) {
	f := fs.get(key)
	switch {
	case f == nil || isNull(f.val):
		return "", missing, fmt.Sprintf("missing required field %q", key)
	case !isString(f.val):
		return "", f.key.Line, fmt.Sprintf("field %q must be a string", key)
	case strings.TrimSpace(f.val.Value) == "":
		return "", f.key.Line, fmt.Sprintf("field %q is empty", key)
	}
	return f.val.Value, f.key.Line, ""
}

// agentName returns the agent's name, checked as the CLI checks it: a string,
// not starting with "-", at most 256 characters, without ":" (reserved for
// plugins' agents).
func agentName(fs fieldList, missing int) (string, int, string) {
	name, line, msg := requiredString(fs, "name", missing)
	if msg != "" {
		return "", line, msg
	}
	return name, line, checkName(name)
}

// visibleDescription returns a description without its invisible
// characters (see invisible), with a warning at line when it had any; ""
// when nothing visible is left.
func (p *parser) visibleDescription(desc string, line int, agent string) string {
	clean := strings.Map(func(r rune) rune {
		if invisible(r) {
			return -1
		}
		return r
	}, desc)
	if strings.TrimSpace(clean) == "" {
		return ""
	}
	if n := utf8.RuneCountInString(desc) - utf8.RuneCountInString(clean); n > 0 {
		p.warn(line, agent, "field description: %d control or invisible formatting characters removed", n)
	}
	return clean
}

// invisible reports whether r is a control character other than a line
// break or a tab (Unicode category Cc: C0, DEL, C1) or an invisible
// formatting character (Cf: the bidirectional embeddings, overrides and
// isolates such as U+202E, zero-width spaces and joiners, U+FEFF, the tag
// characters U+E0000–U+E007F): in a tool's description they would hide or
// reorder text that the host's model reads and a person does not see.
func invisible(r rune) bool {
	return r != '\n' && r != '\t' && (unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r))
}

func checkName(name string) string {
	switch {
	case strings.HasPrefix(name, "-"):
		return fmt.Sprintf("invalid name %q: it must not start with \"-\"", name)
	case utf8.RuneCountInString(name) > maxNameLen:
		return fmt.Sprintf("invalid name: longer than %d characters", maxNameLen)
	case strings.ContainsAny(name, ":\uFF1A\uFE55\uFE13"):
		return fmt.Sprintf("invalid name %q: \":\" is reserved for plugins' agents", name)
	case strings.ContainsFunc(name, func(r rune) bool { return r == '\n' || r == '\t' || invisible(r) }):
		return fmt.Sprintf("invalid name %q: it holds a control or invisible formatting character", name)
	}
	return ""
}
