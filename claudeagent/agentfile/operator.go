package agentfile

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

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
	if a.Description = p.visibleDescription(desc, at, a.Name); a.Description == "" {
		return skip(at, "field \"description\" has no visible text")
	}
	prompt, at, msg := requiredString(fields, "prompt", line)
	if msg != "" {
		return skip(at, "%s", msg)
	}
	a.Prompt = strings.TrimSpace(prompt)
	if line, msg := unloadable(fields); msg != "" {
		return skip(line, "%s", msg)
	}
	p.optionalFields(fieldContext{agent: a, operator: true, baseDir: filepath.Dir(p.path)}, fields, "name", "description", "prompt")
	return a
}

// operatorFields are the parsers of the session options of an operator
// entry, which agent files cannot set.
var operatorFields = map[string]func(*fieldIn){
	"maxBudgetUsd": func(in *fieldIn) {
		var x float64
		v := in.v
		if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") || v.Decode(&x) != nil || !(x > 0) || math.IsInf(x, 0) {
			in.bad("not a positive number of dollars")
			return
		}
		in.a.Operator.MaxBudgetUSD = x
	},
	"worktree": func(in *fieldIn) {
		switch v := in.v; {
		case isString(v) && strings.TrimSpace(v.Value) != "":
			in.a.Operator.Worktree = Worktree{On: true, Name: v.Value}
		case v.Kind == yaml.ScalarNode && v.Tag == "!!bool":
			b, _ := parseBool(v)
			in.a.Operator.Worktree = Worktree{On: b}
		default:
			in.bad("use true, false or a name")
		}
	},
	"profile": func(in *fieldIn) {
		if s, ok := in.str(); ok {
			in.a.Operator.Profile = s
		}
	},
	"appendSystemPrompt": func(in *fieldIn) {
		if s, ok := in.str(); ok {
			in.a.Operator.AppendSystemPrompt = s
		}
	},
	"settingSources": func(in *fieldIn) {
		list, ok := stringList(in.v)
		if !ok {
			in.bad("not a list of user, project and local")
			return
		}
		for _, s := range list {
			if !slices.Contains(settingSources, s) {
				in.bad("%q is not one of user, project, local", s)
				return
			}
		}
		in.a.Operator.SettingSources = list
	},
	"plugins": func(in *fieldIn) {
		list, ok := stringList(in.v)
		if !ok || slices.Contains(list, "") {
			in.bad("not a list of plugin directories")
			return
		}
		for i, dir := range list {
			list[i] = absFrom(in.ctx.baseDir, dir)
		}
		in.a.Operator.Plugins = list
	},
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
