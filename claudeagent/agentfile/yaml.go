package agentfile

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/jsonstr"
)

// The YAML layer: parsing with the lines of the file, the CLI's lenient
// second try, and reading yaml.v3 nodes as the CLI reads values.

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
// spaces; the error reported is the first one, or, when only a value that
// opens a flow collection without closing it kept the text from parsing,
// that value's.
func parseYAML(text string, first int, lenient bool) (*yaml.Node, *yamlError) {
	var doc yaml.Node
	err := yaml.Unmarshal([]byte(text), &doc)
	if err != nil && lenient {
		var retry yaml.Node
		if yaml.Unmarshal([]byte(quoteLossyValues(text, false)), &retry) == nil {
			doc, err = retry, nil
		} else if line, v := unclosedFlow(text); line > 0 && yaml.Unmarshal([]byte(quoteLossyValues(text, true)), &retry) == nil {
			return nil, &yamlError{first + line - 1, fmt.Sprintf("%q opens a flow list or mapping that is not closed on its line: close it, or quote the value if it is text", v)}
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
// Unlike the CLI, a value that opens a flow list or mapping it does not
// close on its line ("name: [oops", "tools: [Read, Grep") is left as
// written unless all: it is a syntax error, not prose, and the file is
// skipped with it rather than served with a name or tools made of its
// pieces.
func quoteLossyValues(text string, all bool) string {
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
		if !all && opensFlow(v) {
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

// opensFlow reports whether a value opens a flow list or mapping that it
// does not close.
func opensFlow(v string) bool {
	return v[0] == '[' && !strings.Contains(v, "]") || v[0] == '{' && !strings.Contains(v, "}")
}

// unclosedFlow returns the 1-based line of the first top-level field whose
// value opens a flow list or mapping it does not close, and that value;
// 0 when there is none.
func unclosedFlow(text string) (int, string) {
	for i, l := range strings.Split(text, "\n") {
		if m := plainFieldRE.FindStringSubmatch(l); m != nil && opensFlow(m[2]) {
			return i + 1, m[2]
		}
	}
	return 0, ""
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
	data, err := jsonstr.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	return data, nil
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
