// Package toolargs checks a tool call's arguments against the tool's JSON
// input schema, with errors a model can act on.
//
// It owns the check and its error texts, and knows JSON Schema (the
// keywords the tools' schemas use: type, enum, properties, required, items,
// additionalProperties) and nothing of MCP, sessions or the tools
// themselves: forms of a parameter that a tool no longer takes come from
// the caller, as a Legacy.
package toolargs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/nearest"
)

// The arguments of a tools/call are checked here against the tool's input
// schema, before the SDK sees them (mcptools' middleware, for every tool,
// agent tools included). The SDK's own validation would say
// `validating /properties/sessionId: type: <invalid reflect.Value> has type
// "null", want "string"`, and the lean schemas refuse no unknown name
// (they do not say additionalProperties: false). Here each error names the
// parameter (a path such as images[0].path), the type it takes and what
// came instead, and for an unknown name or a value outside an enumeration
// the nearest known one: `sessionId: expected a string, got null`,
// `unknown parameter "modle" for claude_session_create (did you mean
// "model"?)`. Arguments that pass decode as the SDK's check wants.

// maxArgErrors caps the errors one call reports.
const maxArgErrors = 5

// Legacy refuses a parameter's value in a form its tool took before, saying
// the form it takes now; nil lets the schema check it.
type Legacy func(name string, raw json.RawMessage) error

// Check checks a call of tool against its input schema; the error, a tool
// error for the caller, lists what is wrong, one item per parameter. Each
// parameter the schema has goes through legacy first, when given.
func Check(schema *jsonschema.Schema, tool string, args json.RawMessage, legacy Legacy) error {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	var m map[string]json.RawMessage
	if args[0] != '{' || json.Unmarshal(args, &m) != nil {
		return fmt.Errorf("the arguments of %s must be an object of its parameters, got %s", tool, got(args))
	}
	c := argCheck{}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		prop := schema.Properties[name]
		if prop == nil {
			c.add(unknownName("parameter", name, " for "+tool, schema))
			continue
		}
		if legacy != nil {
			if err := legacy(name, m[name]); err != nil {
				c.add(err.Error())
				continue
			}
		}
		c.property(name, name, schema, m[name])
	}
	for _, name := range schema.Required {
		if _, ok := m[name]; !ok {
			c.add(fmt.Sprintf("missing parameter %q: %s needs it (%s)", name, tool, wanted(schema.Properties[name])))
		}
	}
	return c.err()
}

// argCheck collects the errors of one call's arguments.
type argCheck struct {
	errs []string
	more int // errors beyond maxArgErrors
}

func (c *argCheck) add(msg string) {
	if len(c.errs) == maxArgErrors {
		c.more++
		return
	}
	c.errs = append(c.errs, msg)
}

func (c *argCheck) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	msg := strings.Join(c.errs, "; ")
	if c.more > 0 {
		msg += fmt.Sprintf("; and %d more", c.more)
	}
	return errors.New(msg)
}

// property checks the property name of an object whose schema is of,
// found at path.
func (c *argCheck) property(path, name string, of *jsonschema.Schema, raw json.RawMessage) {
	if slices.Contains(of.Required, name) {
		c.value(path, of.Properties[name], raw)
		return
	}
	c.optional(path, of.Properties[name], raw)
}

// optional checks raw, found at path, against s for an object that does
// not require it: a null s does not take gets the advice to leave it out.
func (c *argCheck) optional(path string, s *jsonschema.Schema, raw json.RawMessage) {
	raw = bytes.TrimSpace(raw)
	if jsonKind(raw) == "null" && !typeMatches(s, "null", raw) {
		c.add(fmt.Sprintf("%s: expected %s, got null (leave it out for the default)", path, wanted(s)))
		return
	}
	c.value(path, s, raw)
}

// value checks raw, found at path, against s.
func (c *argCheck) value(path string, s *jsonschema.Schema, raw json.RawMessage) {
	raw = bytes.TrimSpace(raw)
	kind := jsonKind(raw)
	if !typeMatches(s, kind, raw) {
		msg := fmt.Sprintf("%s: expected %s, got %s", path, wanted(s), got(raw))
		switch {
		case kind != "array" && kind != "object" && kind != "null" && slices.Contains(types(s), "array"):
			if v, ok := quotable(raw); ok {
				msg += fmt.Sprintf(" (put it in a list: [%s])", v)
			} else {
				msg += " (put it in a list)"
			}
		}
		c.add(msg)
		return
	}
	switch kind {
	case "string":
		var v string
		_ = json.Unmarshal(raw, &v)
		if len(s.Enum) > 0 && !slices.Contains(s.Enum, any(v)) {
			what := fmt.Sprintf("a string of %d bytes", len(v))
			if q, ok := quotable(raw); ok {
				what = q
			}
			c.add(fmt.Sprintf("%s: %s is not %s%s", path, what, wanted(s), didYouMean(v, enumStrings(s.Enum))))
		}
	case "array":
		var items []json.RawMessage
		_ = json.Unmarshal(raw, &items)
		if s.Items != nil {
			for i, item := range items {
				c.value(fmt.Sprintf("%s[%d]", path, i), s.Items, item)
			}
		}
	case "object":
		c.object(path, s, raw)
	}
}

// object checks an object's members: the properties s lists (any other
// name is refused when it lists some and allows no others), or each member
// against additionalProperties.
func (c *argCheck) object(path string, s *jsonschema.Schema, raw json.RawMessage) {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	for _, name := range slices.Sorted(maps.Keys(m)) {
		switch {
		case s.Properties[name] != nil:
			c.property(path+"."+name, name, s, m[name])
		case s.AdditionalProperties != nil:
			c.optional(fmt.Sprintf("%s[%q]", path, name), s.AdditionalProperties, m[name])
		case len(s.Properties) > 0:
			c.add(path + ": " + unknownName("field", name, "", s))
		}
	}
	for _, name := range s.Required {
		if _, ok := m[name]; !ok {
			c.add(fmt.Sprintf("%s: missing field %q (%s)", path, name, wanted(s.Properties[name])))
		}
	}
}

// unknownName refuses a name s does not list: the nearest one it does, else
// all of them.
func unknownName(what, name, where string, s *jsonschema.Schema) string {
	known := slices.Sorted(maps.Keys(s.Properties))
	if near := nearest.Name(name, known); near != "" {
		return fmt.Sprintf("unknown %s %q%s (did you mean %q?)", what, name, where, near)
	}
	return fmt.Sprintf("unknown %s %q%s: it takes %s", what, name, where, strings.Join(known, ", "))
}

func didYouMean(v string, known []string) string {
	if near := nearest.Name(v, known); near != "" {
		return fmt.Sprintf(" (did you mean %q?)", near)
	}
	return ""
}

// jsonKind is the JSON type of a valid value: null, boolean, string,
// array, object or number.
func jsonKind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	switch raw[0] {
	case 'n':
		return "null"
	case 't', 'f':
		return "boolean"
	case '"':
		return "string"
	case '[':
		return "array"
	case '{':
		return "object"
	}
	return "number"
}

// types are the JSON types s allows; none means any.
func types(s *jsonschema.Schema) []string {
	if s.Type != "" {
		return []string{s.Type}
	}
	return s.Types
}

// typeMatches reports whether a value of kind fits s's types. An integer
// is written in digits (a Go int decodes nothing else: not 3.0, not 1e3).
func typeMatches(s *jsonschema.Schema, kind string, raw json.RawMessage) bool {
	ts := types(s)
	if len(ts) == 0 || slices.Contains(ts, kind) {
		return true
	}
	if kind == "number" && slices.Contains(ts, "integer") {
		_, err := strconv.ParseInt(string(raw), 10, 64)
		return err == nil
	}
	return false
}

// wanted says what s takes.
func wanted(s *jsonschema.Schema) string {
	if s == nil {
		return "any value"
	}
	if len(s.Enum) > 0 {
		return "one of " + strings.Join(enumStrings(s.Enum), ", ")
	}
	var out []string
	for _, t := range types(s) {
		switch t {
		case "string":
			out = append(out, "a string")
		case "integer":
			out = append(out, "a whole number")
		case "number":
			out = append(out, "a number")
		case "boolean":
			out = append(out, "true or false")
		case "object":
			out = append(out, "an object")
		case "array":
			a := "an array"
			if s.Items != nil && len(types(s.Items)) == 1 {
				a += " of " + plural(types(s.Items)[0])
			}
			out = append(out, a)
		case "null":
			out = append(out, "null")
		}
	}
	if len(out) == 0 {
		return "any value"
	}
	return strings.Join(out, " or ")
}

func plural(t string) string {
	switch t {
	case "integer":
		return "whole numbers"
	case "boolean":
		return "booleans"
	case "array":
		return "arrays"
	case "object":
		return "objects"
	}
	return t + "s"
}

// got says what a value is, quoting a short scalar.
func got(raw json.RawMessage) string {
	v, ok := quotable(raw)
	switch kind := jsonKind(raw); {
	case kind == "null":
		return "null"
	case kind == "boolean":
		return string(raw)
	case kind == "string" && ok:
		return "the string " + v
	case kind == "string":
		var s string
		_ = json.Unmarshal(raw, &s)
		return fmt.Sprintf("a string of %d bytes", len(s))
	case kind == "number" && ok:
		return "the number " + v
	case kind == "number":
		return "a number"
	case kind == "array":
		return "an array"
	default:
		return "an object"
	}
}

// maxQuoted is the longest scalar an argument error quotes: a value the
// caller mistyped, not a prompt that went to the wrong parameter.
const maxQuoted = 40

// quotable is a scalar of at most maxQuoted bytes as an error quotes it: a
// string in Go's quotes (which the audit log's redaction recognises), a
// number as written.
func quotable(raw json.RawMessage) (string, bool) {
	switch jsonKind(raw) {
	case "string":
		var v string
		if json.Unmarshal(raw, &v) != nil || len(v) > maxQuoted {
			return "", false
		}
		return strconv.Quote(v), true
	case "number":
		return string(raw), len(raw) <= maxQuoted
	}
	return "", false
}

func enumStrings(vals []any) []string {
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		out = append(out, fmt.Sprint(v))
	}
	return out
}
