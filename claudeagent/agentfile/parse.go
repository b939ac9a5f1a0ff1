package agentfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// MaxFileBytes caps an agent file or the operator file, as the CLI caps
// agent files; a larger file is skipped with a warning.
const MaxFileBytes = 1 << 20

// maxNameLen is the CLI's cap on an agent's name, in characters.
const maxNameLen = 256

// The values the CLI 2.1.330 accepts in an agent file.
var (
	effortLevels    = []string{"low", "medium", "high", "xhigh", "max"}
	permissionModes = []string{"acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan"}
	colors          = []string{"red", "blue", "green", "yellow", "purple", "orange", "pink", "cyan"}
	memoryScopes    = []string{"user", "project", "local"}
	isolations      = []string{"worktree", "remote"}
	settingSources  = []string{"user", "project", "local"}
)

// minAutoCompactWindow is the CLI's floor for autoCompactWindow.
const minAutoCompactWindow = 100000

// unloadableKeys are hook events that the CLI refuses outside "hooks": a
// permission guard declared there would not run, so the agent is not
// loaded at all.
var unloadableKeys = []string{"PreToolUse", "PermissionRequest"}

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

// ParseOperatorFile parses an operator file: JSON or YAML, either an object
// of agents by name ({"reviewer": {"description": …, "prompt": …}}) or a
// list of agents with a "name" each. An entry takes the fields of an
// agent file, the prompt in "prompt", and the session options of
// [OperatorOptions] (effort, maxBudgetUsd, worktree, profile,
// settingSources, permissionMode, mcpServers as an object, plugins,
// appendSystemPrompt). A bad entry is skipped with a warning; the error,
// a [Warning], says why the whole file was. Within the file a later entry
// with the same name wins.
func ParseOperatorFile(path string, data []byte) ([]*Agent, []Warning, error) {
	p := &parser{path: path}
	agents, err := p.operatorFile(data)
	if err != nil {
		return nil, nil, err
	}
	return agents, p.warns, nil
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
	a.Description = strings.ReplaceAll(desc, `\n`, "\n")
	for _, k := range unloadableKeys {
		if f := fields.get(k); f != nil {
			return skip(f.key.Line, "%s is declared at the top level, outside \"hooks\": the CLI does not load an agent whose permission guard would not run", k)
		}
	}
	a.Prompt = strings.TrimSpace(body)
	if a.Prompt == "" {
		// The CLI 2.1.197 refuses an empty prompt in --agents, and with it
		// every agent of the flag.
		return skip(bodyLine, "the system prompt (the text after the front matter) is empty")
	}
	var unknown []unknownField
	ctx := fieldContext{agent: a, unknownLines: &unknown}
	for _, f := range fields {
		switch f.key.Value {
		case "name", "description":
		default:
			p.field(ctx, f)
		}
	}
	p.reportUnknown(a, unknown)
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

// yamlError is a YAML syntax error at a line of the file.
type yamlError struct {
	line int
	text string
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlErrorLine returns the 1-based line of a yaml.v3 syntax error in its
// text, and the error without it. yaml.v3 counts lines from 1 for the
// scanner's errors but from 0 for the parser's ("did not find expected
// …", where the line is that of the collection being parsed), and names
// no line 0.
func yamlErrorLine(err error) (int, string) {
	msg := err.Error()
	m := yamlLineRE.FindStringSubmatch(msg)
	if m == nil {
		return 1, strings.TrimPrefix(msg, "yaml: ")
	}
	n, _ := strconv.Atoi(m[1])
	msg = m[2]
	for _, p := range []string{"did not find expected", "found duplicate %", "found incompatible YAML document", "found undefined tag handle"} {
		if strings.HasPrefix(msg, p) {
			return n + 1, msg
		}
	}
	return n, msg
}

// parseYAML parses a YAML (or JSON) document whose first line is line
// first of its file, returning its root node (nil for an empty document)
// with the lines of the file. When lenient, like the CLI with front matter,
// a text that does not parse is tried again with the values that YAML
// misreads quoted ("description: Use it when: …") and leading tabs made
// spaces; the error reported is the first one.
func parseYAML(text string, first int, lenient bool) (*yaml.Node, *yamlError) {
	var doc yaml.Node
	err := yaml.Unmarshal([]byte(text), &doc)
	if err != nil && lenient {
		var retry yaml.Node
		if yaml.Unmarshal([]byte(quoteLossyValues(text)), &retry) == nil {
			doc, err = retry, nil
		}
	}
	if err != nil {
		n, msg := yamlErrorLine(err)
		return nil, &yamlError{first + n - 1, msg}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	shiftLines(&doc, first-1)
	return resolve(doc.Content[0]), nil
}

// shiftLines adds d to the line of every node under n (an alias's target
// is shifted where it is defined).
func shiftLines(n *yaml.Node, d int) {
	n.Line += d
	for _, c := range n.Content {
		shiftLines(c, d)
	}
}

var (
	plainFieldRE = regexp.MustCompile(`^([a-zA-Z_-]+):\s+(\S.*)$`)
	lossyRE      = regexp.MustCompile("[{}\\[\\]*&#!|>%@`]|: ")
	leadingTabRE = regexp.MustCompile(`(?m)^\t+`)
)

// quoteLossyValues is the CLI's second try at a front matter that did not
// parse: a top-level "key: value" whose value holds a character YAML
// reads specially is double-quoted, line for line (so line numbers stay).
func quoteLossyValues(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		m := plainFieldRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		v := m[2]
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			continue
		}
		if v[0] == '[' && v[len(v)-1] == ']' {
			var list []any
			if yaml.Unmarshal([]byte(v), &list) == nil {
				continue
			}
		}
		if lossyRE.MatchString(v) {
			v = strings.ReplaceAll(v, `\`, `\\`)
			v = strings.ReplaceAll(v, `"`, `\"`)
			lines[i] = m[1] + `: "` + v + `"`
		}
	}
	return leadingTabRE.ReplaceAllStringFunc(strings.Join(lines, "\n"), func(t string) string {
		return strings.Repeat("  ", len(t))
	})
}

// resolve follows aliases.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// field is one key and value of a mapping.
type field struct {
	key, val *yaml.Node
}

type fieldList []field

func (fs fieldList) get(key string) *field {
	for i := range fs {
		if fs[i].key.Value == key {
			return &fs[i]
		}
	}
	return nil
}

// mappingFields returns the fields of a mapping node in order, or the key
// of the first field that appears twice.
func mappingFields(m *yaml.Node) (fieldList, *yaml.Node) {
	if m == nil {
		return nil, nil
	}
	var fs fieldList
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := resolve(m.Content[i]), resolve(m.Content[i+1])
		if seen[k.Value] {
			return nil, k
		}
		seen[k.Value] = true
		fs = append(fs, field{k, v})
	}
	return fs, nil
}

// isString reports whether n is a string scalar.
func isString(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!str"
}

// isNull reports whether n is null ("key:" with nothing, or ~).
func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
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

func checkName(name string) string {
	switch {
	case strings.HasPrefix(name, "-"):
		return fmt.Sprintf("invalid name %q: it must not start with \"-\"", name)
	case utf8.RuneCountInString(name) > maxNameLen:
		return fmt.Sprintf("invalid name: longer than %d characters", maxNameLen)
	case strings.ContainsAny(name, ":\uFF1A\uFE55\uFE13"):
		return fmt.Sprintf("invalid name %q: \":\" is reserved for plugins' agents", name)
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Sprintf("invalid name %q: it holds a control character", name)
	}
	return ""
}

// fieldContext is what a field is parsed into.
type fieldContext struct {
	agent        *Agent
	operator     bool   // an operator file entry, not an agent file
	baseDir      string // the operator file's directory, for plugins
	unknownLines *[]unknownField
}

type unknownField struct {
	name string
	line int
}

// field parses one optional field into the agent. A bad value is dropped
// with a warning, as the CLI drops it.
func (p *parser) field(ctx fieldContext, f field) {
	a := ctx.agent
	key, v, line := f.key.Value, f.val, f.key.Line
	bad := func(format string, args ...any) {
		p.warn(line, a.Name, "field %s ignored: %s", key, fmt.Sprintf(format, args...))
	}
	str := func() (string, bool) {
		if !isString(v) {
			bad("not a string")
			return "", false
		}
		return v.Value, true
	}
	oneOf := func(valid []string) (string, bool) {
		s, ok := str()
		if !ok {
			return "", false
		}
		if !slices.Contains(valid, s) {
			bad("%q is not one of %s", s, strings.Join(valid, ", "))
			return "", false
		}
		return s, true
	}
	switch key {
	case "model":
		if s, ok := str(); ok {
			s = strings.TrimSpace(s)
			if strings.EqualFold(s, "inherit") {
				s = "inherit"
			}
			if s == "" {
				bad("empty")
			}
			a.Model = s
		}
	case "tools":
		a.Tools = p.toolList(ctx, f)
		if slices.Contains(a.Tools, "*") {
			a.Tools = nil // all of them, as when absent
		}
	case "disallowedTools":
		a.DisallowedTools = p.toolList(ctx, f)
		if slices.Contains(a.DisallowedTools, "*") {
			a.DisallowedTools = nil // the CLI ignores such a list
		}
	case "skills":
		a.Skills = p.toolList(ctx, f)
	case "color":
		if s, ok := oneOf(colors); ok {
			a.Color = s
		}
	case "effort":
		if ctx.operator {
			if s, ok := oneOf(effortLevels); ok {
				a.Operator.Effort = s
			}
			return
		}
		if e, ok := parseEffort(v); ok {
			a.Effort = e
		} else {
			bad("use %s or a positive integer", strings.Join(effortLevels, ", "))
		}
	case "permissionMode":
		s, ok := str()
		if !ok {
			return
		}
		if s == "manual" { // the CLI's other name for default
			s = "default"
		}
		if !slices.Contains(permissionModes, s) {
			bad("%q is not one of %s", s, strings.Join(permissionModes, ", "))
			return
		}
		if ctx.operator {
			a.Operator.PermissionMode = s
		} else {
			a.PermissionMode = s
		}
	case "mcpServers":
		if ctx.operator {
			p.operatorMCPServers(a, f)
			return
		}
		p.agentMCPServers(a, f)
	case "hooks":
		if v.Kind != yaml.MappingNode {
			bad("not a mapping of hook events")
			return
		}
		if raw, err := toJSON(v); err != nil {
			bad("%v", err)
		} else {
			a.Hooks = raw
		}
	case "maxTurns":
		if n, ok := positiveInt(v); ok {
			a.MaxTurns = n
		} else {
			bad("not a positive integer")
		}
	case "autoCompactWindow":
		if n, ok := positiveInt(v); ok && n >= minAutoCompactWindow {
			a.AutoCompactWindow = n
		} else {
			bad("not an integer of at least %d", minAutoCompactWindow)
		}
	case "initialPrompt":
		if s, ok := str(); ok && strings.TrimSpace(s) != "" {
			a.InitialPrompt = s
		}
	case "memory":
		if s, ok := oneOf(memoryScopes); ok {
			a.Memory = s
		}
	case "isolation":
		if s, ok := oneOf(isolations); ok {
			a.Isolation = s
		}
	case "background":
		if b, ok := parseBool(v); ok {
			a.Background = b
		} else {
			bad("not true or false")
		}
	case "omitClaudeMd":
		if b, ok := parseBool(v); ok {
			a.OmitClaudeMd = b
		} else {
			bad("not true or false")
		}
	case "observer":
		if s, ok := str(); ok {
			a.Observer = strings.TrimSpace(s)
		}
	case "observerMessage":
		if s, ok := str(); ok && strings.TrimSpace(s) != "" {
			a.ObserverMessage = s
		}
	case "observeSubagents", "observeToolResults":
		b, ok := parseBool(v)
		if !ok {
			bad("not true or false")
			return
		}
		if !b {
			if key == "observeSubagents" {
				a.ObserveSubagents = &b
			} else {
				a.ObserveToolResults = &b
			}
		}
	case "experimental":
		p.warn(line, a.Name, "field experimental ignored: --agents does not take it")
	case "prompt", "name":
		if !ctx.operator {
			*ctx.unknownLines = append(*ctx.unknownLines, unknownField{key, line})
			p.keepUnknown(a, f)
		}
		// The operator entry's prompt and name are read by operatorEntry.
	default:
		if ctx.operator && p.operatorField(ctx, f) {
			return
		}
		*ctx.unknownLines = append(*ctx.unknownLines, unknownField{key, line})
		p.keepUnknown(a, f)
	}
}

// operatorField parses the session options of an operator entry; false
// means key is not one.
func (p *parser) operatorField(ctx fieldContext, f field) bool {
	a := ctx.agent
	key, v, line := f.key.Value, f.val, f.key.Line
	bad := func(format string, args ...any) {
		p.warn(line, a.Name, "field %s ignored: %s", key, fmt.Sprintf(format, args...))
	}
	op := &a.Operator
	switch key {
	case "maxBudgetUsd":
		var x float64
		if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") || v.Decode(&x) != nil || !(x > 0) || math.IsInf(x, 0) {
			bad("not a positive number of dollars")
			return true
		}
		op.MaxBudgetUSD = x
	case "worktree":
		switch {
		case isString(v) && strings.TrimSpace(v.Value) != "":
			op.Worktree = Worktree{On: true, Name: v.Value}
		case v.Kind == yaml.ScalarNode && v.Tag == "!!bool":
			b, _ := parseBool(v)
			op.Worktree = Worktree{On: b}
		default:
			bad("use true, false or a name")
		}
	case "profile", "appendSystemPrompt":
		if !isString(v) {
			bad("not a string")
			return true
		}
		if key == "profile" {
			op.Profile = v.Value
		} else {
			op.AppendSystemPrompt = v.Value
		}
	case "settingSources":
		list, ok := stringList(v)
		if !ok {
			bad("not a list of user, project and local")
			return true
		}
		for _, s := range list {
			if !slices.Contains(settingSources, s) {
				bad("%q is not one of user, project, local", s)
				return true
			}
		}
		op.SettingSources = list
	case "plugins":
		list, ok := stringList(v)
		if !ok || slices.Contains(list, "") {
			bad("not a list of plugin directories")
			return true
		}
		for i, dir := range list {
			list[i] = absFrom(ctx.baseDir, dir)
		}
		op.Plugins = list
	default:
		return false
	}
	return true
}

// reportUnknown warns once about the unknown fields of an agent.
func (p *parser) reportUnknown(a *Agent, unknown []unknownField) {
	if len(unknown) == 0 {
		return
	}
	names := make([]string, len(unknown))
	for i, u := range unknown {
		names[i] = strconv.Quote(u.name)
	}
	what := "unknown field"
	if len(unknown) > 1 {
		what = "unknown fields"
	}
	p.warn(unknown[0].line, a.Name, "%s %s kept aside, not passed on", what, strings.Join(names, ", "))
}

// keepUnknown stores an unknown field's value in the agent.
func (p *parser) keepUnknown(a *Agent, f field) {
	var v any
	if err := f.val.Decode(&v); err != nil {
		v = f.val.Value
	}
	if a.Unknown == nil {
		a.Unknown = map[string]any{}
	}
	a.Unknown[f.key.Value] = v
}

// toolList reads tools, disallowedTools or skills as the CLI does: a
// comma- or space-separated string or a list of such strings (a comma or
// space inside parentheses, as in "Bash(git log:*)", does not separate).
// A null or empty value is an empty list: no tools.
func (p *parser) toolList(ctx fieldContext, f field) []string {
	v := f.val
	var parts []string
	switch {
	case isNull(v):
	case v.Kind == yaml.ScalarNode:
		// false and 0 are read as an empty list too, like the CLI's.
		if v.Tag == "!!str" {
			parts = []string{v.Value}
		}
	case v.Kind == yaml.SequenceNode:
		for _, item := range v.Content {
			item = resolve(item)
			if !isString(item) {
				p.warn(item.Line, ctx.agent.Name, "field %s: an item ignored: not a string", f.key.Value)
				continue
			}
			parts = append(parts, item.Value)
		}
	default:
		p.warn(f.key.Line, ctx.agent.Name, "field %s ignored: not a string or a list", f.key.Value)
		return nil
	}
	list := []string{}
	for _, s := range parts {
		list = append(list, splitToolList(s)...)
	}
	return list
}

// splitToolList splits "Read, Grep Bash(git log:*)" at commas and spaces
// outside parentheses.
func splitToolList(s string) []string {
	var out []string
	var cur strings.Builder
	depth := 0
	flush := func() {
		if t := strings.TrimSpace(cur.String()); t != "" {
			out = append(out, t)
		}
		cur.Reset()
	}
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case (r == ',' || r == ' ' || r == '\t' || r == '\n') && depth == 0:
			flush()
			continue
		}
		cur.WriteRune(r)
	}
	flush()
	return out
}

// agentMCPServers reads an agent file's mcpServers: a list of server
// names, or of single-key objects {name: config}. Bad items are dropped.
func (p *parser) agentMCPServers(a *Agent, f field) {
	if f.val.Kind != yaml.SequenceNode {
		p.warn(f.key.Line, a.Name, "field mcpServers ignored: not a list of server names or {name: config} entries")
		return
	}
	var items []json.RawMessage
	for _, item := range f.val.Content {
		item = resolve(item)
		ok := isString(item) || item.Kind == yaml.MappingNode && len(item.Content) == 2
		if !ok {
			p.warn(item.Line, a.Name, "field mcpServers: an item ignored: use a server name or a single {name: config} entry")
			continue
		}
		raw, err := toJSON(item)
		if err != nil {
			p.warn(item.Line, a.Name, "field mcpServers: an item ignored: %v", err)
			continue
		}
		items = append(items, raw)
	}
	if len(items) > 0 {
		a.MCPServers, _ = json.Marshal(items)
	}
}

// operatorMCPServers reads an operator entry's mcpServers: the session's
// {name: config} object.
func (p *parser) operatorMCPServers(a *Agent, f field) {
	fs, dup := mappingFields(f.val)
	if f.val.Kind != yaml.MappingNode || dup != nil {
		p.warn(f.key.Line, a.Name, "field mcpServers ignored: in the operator file it is the session's {name: config} object")
		return
	}
	servers := map[string]json.RawMessage{}
	for _, s := range fs {
		if s.val.Kind != yaml.MappingNode {
			p.warn(s.key.Line, a.Name, "field mcpServers: server %q ignored: its config is not an object", s.key.Value)
			continue
		}
		raw, err := toJSON(s.val)
		if err != nil {
			p.warn(s.key.Line, a.Name, "field mcpServers: server %q ignored: %v", s.key.Value, err)
			continue
		}
		servers[s.key.Value] = raw
	}
	if len(servers) > 0 {
		a.Operator.MCPServers = servers
	}
}

// parseEffort reads an effort level (the CLI lowercases it and reads "med"
// as medium) or a positive integer.
func parseEffort(v *yaml.Node) (Effort, bool) {
	if v.Kind != yaml.ScalarNode {
		return "", false
	}
	if v.Tag == "!!int" {
		n, ok := positiveInt(v)
		return Effort(strconv.Itoa(n)), ok
	}
	if v.Tag != "!!str" {
		return "", false
	}
	s := strings.ToLower(strings.TrimSpace(v.Value))
	if s == "med" {
		s = "medium"
	}
	if slices.Contains(effortLevels, s) {
		return Effort(s), true
	}
	if n, err := strconv.Atoi(s); err == nil && n > 0 {
		return Effort(strconv.Itoa(n)), true
	}
	return "", false
}

// positiveInt reads an integer > 0, written as a number or a string.
func positiveInt(v *yaml.Node) (int, bool) {
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!str") {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v.Value))
	if err != nil {
		var x int
		if v.Tag != "!!int" || v.Decode(&x) != nil {
			return 0, false
		}
		n = x
	}
	return n, n > 0
}

// parseBool reads true or false, written as a boolean or a string.
func parseBool(v *yaml.Node) (bool, bool) {
	if v.Kind != yaml.ScalarNode {
		return false, false
	}
	switch {
	case v.Tag == "!!bool":
		var b bool
		return b, v.Decode(&b) == nil
	case v.Tag == "!!str" && v.Value == "true":
		return true, true
	case v.Tag == "!!str" && v.Value == "false":
		return false, true
	}
	return false, false
}

// stringList reads a list of strings (or one string).
func stringList(v *yaml.Node) ([]string, bool) {
	if isString(v) {
		return []string{v.Value}, true
	}
	if v.Kind != yaml.SequenceNode {
		return nil, false
	}
	list := []string{}
	for _, item := range v.Content {
		item = resolve(item)
		if !isString(item) {
			return nil, false
		}
		list = append(list, item.Value)
	}
	return list, true
}

// toJSON encodes a YAML value as JSON.
func toJSON(n *yaml.Node) (json.RawMessage, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	v, err := jsonable(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// jsonable turns what yaml.v3 decodes into what encoding/json encodes: maps
// with non-string keys become maps with string keys.
func jsonable(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			j, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			x[k] = j
		}
		return x, nil
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			j, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			m[fmt.Sprint(k)] = j
		}
		return m, nil
	case []any:
		for i, e := range x {
			j, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			x[i] = j
		}
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%v is not a JSON number", x)
		}
	}
	return v, nil
}

// operatorFile parses the operator file; an error skips the whole file.
func (p *parser) operatorFile(data []byte) ([]*Agent, error) {
	if len(data) > MaxFileBytes {
		return nil, p.fail(0, "skipped: larger than %d bytes", MaxFileBytes)
	}
	if !utf8.Valid(data) {
		return nil, p.fail(0, "skipped: not UTF-8 text")
	}
	text := strings.TrimPrefix(strings.ReplaceAll(string(data), "\r\n", "\n"), "\uFEFF")
	root, yerr := parseYAML(text, 1, false)
	if yerr != nil {
		return nil, p.fail(yerr.line, "skipped: invalid JSON or YAML: %s", yerr.text)
	}
	var agents []*Agent
	add := func(a *Agent) {
		if a == nil {
			return
		}
		for i, b := range agents {
			if b.Name == a.Name {
				p.warn(b.Line, b.Name, "agent %q is shadowed by the later entry at line %d", b.Name, a.Line)
				agents = slices.Delete(agents, i, i+1)
				break
			}
		}
		agents = append(agents, a)
	}
	switch {
	case root == nil:
		p.warn(0, "", "no agents in the operator file")
	case root.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(root.Content); i += 2 {
			k, v := resolve(root.Content[i]), resolve(root.Content[i+1])
			if !isString(k) {
				p.warn(k.Line, "", "entry %q skipped: its name is not a string", k.Value)
				continue
			}
			add(p.operatorEntry(k.Value, k.Line, v, true))
		}
	case root.Kind == yaml.SequenceNode:
		for _, item := range root.Content {
			item = resolve(item)
			add(p.operatorEntry("", item.Line, item, false))
		}
	default:
		return nil, p.fail(root.Line, `skipped: not an object of agents by name nor a list of agents`)
	}
	return agents, nil
}

// operatorEntry parses one entry of the operator file; key is its name in
// the object form, "" in the list form. nil means skipped (with a
// warning).
func (p *parser) operatorEntry(key string, line int, m *yaml.Node, keyed bool) *Agent {
	label := key
	skip := func(at int, format string, args ...any) *Agent {
		what := "an entry"
		if label != "" {
			what = fmt.Sprintf("entry %q", label)
		}
		p.warn(at, label, "%s skipped: %s", what, fmt.Sprintf(format, args...))
		return nil
	}
	if m.Kind != yaml.MappingNode {
		return skip(line, "not an object")
	}
	fields, dup := mappingFields(m)
	if dup != nil {
		return skip(dup.Line, "field %q appears twice", dup.Value)
	}
	a := &Agent{Source: SourceFile, Path: p.path, Line: line, Name: key}
	if keyed {
		if f := fields.get("name"); f != nil && (!isString(f.val) || f.val.Value != key) {
			p.warn(f.key.Line, key, "field name ignored: the entry's key %q is its name", key)
		}
	} else {
		name, at, msg := requiredString(fields, "name", line)
		if msg != "" {
			return skip(at, "%s", msg)
		}
		a.Name, label = name, name
	}
	if msg := checkName(a.Name); msg != "" {
		return skip(line, "%s", msg)
	}
	desc, at, msg := requiredString(fields, "description", line)
	if msg != "" {
		return skip(at, "%s", msg)
	}
	a.Description = desc
	prompt, at, msg := requiredString(fields, "prompt", line)
	if msg != "" {
		return skip(at, "%s", msg)
	}
	a.Prompt = strings.TrimSpace(prompt)
	for _, k := range unloadableKeys {
		if f := fields.get(k); f != nil {
			return skip(f.key.Line, "%s is declared at the top level, outside \"hooks\": the CLI does not load an agent whose permission guard would not run", k)
		}
	}
	var unknown []unknownField
	ctx := fieldContext{agent: a, operator: true, baseDir: filepath.Dir(p.path), unknownLines: &unknown}
	for _, f := range fields {
		switch f.key.Value {
		case "name", "description", "prompt":
		default:
			p.field(ctx, f)
		}
	}
	p.reportUnknown(a, unknown)
	return a
}

// absFrom returns path made absolute from dir.
func absFrom(dir, path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	if abs, err := filepath.Abs(filepath.Join(dir, path)); err == nil {
		return abs
	}
	return filepath.Join(dir, path)
}
