package agentfile

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/claude-agent-mcp/claude-agent-mcp/claudeagent"
)

// The values the CLI 2.1.330 accepts in an agent file.
var (
	effortLevels    = claudeagent.EffortLevels
	permissionModes = claudeagent.PermissionModes
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

// unloadable returns the line and the reason when fields declare a
// permission hook at the top level (unloadableKeys), or "".
func unloadable(fields fieldList) (int, string) {
	for _, k := range unloadableKeys {
		if f := fields.get(k); f != nil {
			return f.key.Line, k + ` is declared at the top level, outside "hooks": the CLI does not load an agent whose permission guard would not run`
		}
	}
	return 0, ""
}

// optionalFields parses every field but those already read, then warns
// once about the unknown ones.
func (p *parser) optionalFields(ctx fieldContext, fields fieldList, read ...string) {
	var unknown []unknownField
	ctx.unknownLines = &unknown
	for _, f := range fields {
		if !slices.Contains(read, f.key.Value) {
			p.field(ctx, f)
		}
	}
	p.reportUnknown(ctx.agent, unknown)
}

// field parses one optional field into the agent: by agentFields, then in
// an operator entry by operatorFields; any other field is unknown, kept
// aside (an agent file's "prompt" too: its prompt is the body). A bad
// value is dropped with a warning, as the CLI drops it.
func (p *parser) field(ctx fieldContext, f field) {
	in := &fieldIn{p: p, ctx: ctx, a: ctx.agent, f: f, key: f.key.Value, v: f.val, line: f.key.Line}
	if parse, ok := agentFields[in.key]; ok {
		parse(in)
		return
	}
	if parse, ok := operatorFields[in.key]; ok && ctx.operator {
		parse(in)
		return
	}
	*ctx.unknownLines = append(*ctx.unknownLines, unknownField{in.key, in.line})
	p.keepUnknown(ctx.agent, f)
}

// fieldIn is one field being parsed, with the checks its parser uses.
type fieldIn struct {
	p    *parser
	ctx  fieldContext
	a    *Agent
	f    field
	key  string
	v    *yaml.Node
	line int
}

// bad drops the field with a warning saying why.
func (in *fieldIn) bad(format string, args ...any) {
	in.p.warn(in.line, in.a.Name, "field %s ignored: %s", in.key, fmt.Sprintf(format, args...))
}

// str reads a string; false (with a warning) when the value is not one.
func (in *fieldIn) str() (string, bool) {
	if !isString(in.v) {
		in.bad("not a string")
		return "", false
	}
	return in.v.Value, true
}

// oneOf reads a string that must be one of valid.
func (in *fieldIn) oneOf(valid []string) (string, bool) {
	s, ok := in.str()
	if !ok {
		return "", false
	}
	if !slices.Contains(valid, s) {
		in.bad("%q is not one of %s", s, strings.Join(valid, ", "))
		return "", false
	}
	return s, true
}

// boolean reads true or false.
func (in *fieldIn) boolean() (bool, bool) {
	b, ok := parseBool(in.v)
	if !ok {
		in.bad("not true or false")
	}
	return b, ok
}

// Setters shared by fields of one kind.

func setOneOf(dst func(*Agent) *string, valid []string) func(*fieldIn) {
	return func(in *fieldIn) {
		if s, ok := in.oneOf(valid); ok {
			*dst(in.a) = s
		}
	}
}

func setBool(dst func(*Agent) *bool) func(*fieldIn) {
	return func(in *fieldIn) {
		if b, ok := in.boolean(); ok {
			*dst(in.a) = b
		}
	}
}

// setNonBlank sets a string field unless it is blank.
func setNonBlank(dst func(*Agent) *string) func(*fieldIn) {
	return func(in *fieldIn) {
		if s, ok := in.str(); ok && strings.TrimSpace(s) != "" {
			*dst(in.a) = s
		}
	}
}

// setFalseOnly records false: true is the CLI's default and stays unset.
func setFalseOnly(dst func(*Agent) **bool) func(*fieldIn) {
	return func(in *fieldIn) {
		if b, ok := in.boolean(); ok && !b {
			*dst(in.a) = &b
		}
	}
}

// setToolList sets a list of tools; "*" in it means all of them, as when
// absent (the CLI ignores a disallowedTools list with "*" likewise).
func setToolList(dst func(*Agent) *[]string) func(*fieldIn) {
	return func(in *fieldIn) {
		list := in.p.toolList(in.ctx, in.f)
		if slices.Contains(list, "*") {
			list = nil
		}
		*dst(in.a) = list
	}
}

// agentFields are the parsers of the fields of an agent file, which an
// operator entry takes too.
var agentFields = map[string]func(*fieldIn){
	"model":             parseModel,
	"tools":             setToolList(func(a *Agent) *[]string { return &a.Tools }),
	"disallowedTools":   setToolList(func(a *Agent) *[]string { return &a.DisallowedTools }),
	"skills":            func(in *fieldIn) { in.a.Skills = in.p.toolList(in.ctx, in.f) },
	"color":             setOneOf(func(a *Agent) *string { return &a.Color }, colors),
	"effort":            parseEffortField,
	"permissionMode":    parsePermissionMode,
	"mcpServers":        parseMCPServers,
	"hooks":             parseHooks,
	"maxTurns":          parseMaxTurns,
	"autoCompactWindow": parseAutoCompactWindow,
	"initialPrompt":     setNonBlank(func(a *Agent) *string { return &a.InitialPrompt }),
	"memory":            setOneOf(func(a *Agent) *string { return &a.Memory }, memoryScopes),
	"isolation":         setOneOf(func(a *Agent) *string { return &a.Isolation }, isolations),
	"background":        setBool(func(a *Agent) *bool { return &a.Background }),
	"omitClaudeMd":      setBool(func(a *Agent) *bool { return &a.OmitClaudeMd }),
	"observer": func(in *fieldIn) {
		if s, ok := in.str(); ok {
			in.a.Observer = strings.TrimSpace(s)
		}
	},
	"observerMessage":    setNonBlank(func(a *Agent) *string { return &a.ObserverMessage }),
	"observeSubagents":   setFalseOnly(func(a *Agent) **bool { return &a.ObserveSubagents }),
	"observeToolResults": setFalseOnly(func(a *Agent) **bool { return &a.ObserveToolResults }),
	"experimental": func(in *fieldIn) {
		in.p.warn(in.line, in.a.Name, "field experimental ignored: --agents does not take it")
	},
}

func parseModel(in *fieldIn) {
	s, ok := in.str()
	if !ok {
		return
	}
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "inherit") {
		s = "inherit"
	}
	if s == "" {
		in.bad("empty")
	}
	in.a.Model = s
}

// parseEffortField reads an agent's effort; in an operator entry it is
// the session's effort level.
func parseEffortField(in *fieldIn) {
	if in.ctx.operator {
		if s, ok := in.oneOf(effortLevels); ok {
			in.a.Operator.Effort = s
		}
		return
	}
	if e, ok := parseEffort(in.v); ok {
		in.a.Effort = e
	} else {
		in.bad("use %s or a positive integer", strings.Join(effortLevels, ", "))
	}
}

// parsePermissionMode reads the agent's permission mode; in an operator
// entry it is the session's.
func parsePermissionMode(in *fieldIn) {
	s, ok := in.str()
	if !ok {
		return
	}
	if s == "manual" { // the CLI's other name for default
		s = "default"
	}
	if !slices.Contains(permissionModes, s) {
		in.bad("%q is not one of %s", s, strings.Join(permissionModes, ", "))
		return
	}
	if in.ctx.operator {
		in.a.Operator.PermissionMode = s
	} else {
		in.a.PermissionMode = s
	}
}

func parseMCPServers(in *fieldIn) {
	if in.ctx.operator {
		in.p.operatorMCPServers(in.a, in.f)
		return
	}
	in.p.agentMCPServers(in.a, in.f)
}

func parseHooks(in *fieldIn) {
	if in.v.Kind != yaml.MappingNode {
		in.bad("not a mapping of hook events")
		return
	}
	if raw, err := toJSON(in.v); err != nil {
		in.bad("%v", err)
	} else {
		in.a.Hooks = raw
	}
}

func parseMaxTurns(in *fieldIn) {
	if n, ok := positiveInt(in.v); ok {
		in.a.MaxTurns = n
	} else {
		in.bad("not a positive integer")
	}
}

func parseAutoCompactWindow(in *fieldIn) {
	if n, ok := positiveInt(in.v); ok && n >= minAutoCompactWindow {
		in.a.AutoCompactWindow = n
	} else {
		in.bad("not an integer of at least %d", minAutoCompactWindow)
	}
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
