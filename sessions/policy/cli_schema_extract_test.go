package policy

import (
	"bytes"
	"regexp"
	"slices"
)

// The extractor of the CLI's own document schemas from its binary. The CLI
// is a Bun executable holding its JavaScript, minified: the zod schemas of
// its documents are object literals such as
//
//	c({type:E("sse"),url:nt(),headersHelper:n().optional(),...Ho()})
//
// whose identifiers change with every build. The extractor anchors on key
// names only: it finds an anchor key (`apiKeyHelper:`), walks back to the
// `{` of the object literal that holds it, lists that literal's top-level
// keys, and keeps the objects whose keys say which document they are.

// schemaField is one top-level property of an object literal: its key, or
// for a spread (`...Ho()`) the spread's expression, and the source of its
// value.
type schemaField struct {
	key    string
	spread bool
	value  []byte
}

// maxObject bounds how far the extractor looks for an object's ends.
const maxObject = 1 << 20

// enclosingObject returns the offset of the `{` of the innermost object
// literal around offset i (an offset outside any string), or -1. Brackets
// and parentheses around i are walked through; string literals on the way
// are skipped whole.
func enclosingObject(data []byte, i int) int {
	depth := 0
	stop := max(0, i-maxObject)
	for j := i - 1; j >= stop; j-- {
		switch c := data[j]; c {
		case '"', '\'', '`':
			j = stringStartBack(data, j, stop)
			if j < 0 {
				return -1
			}
		case '}', ')', ']':
			depth++
		case '(', '[':
			if depth > 0 {
				depth--
			}
		case '{':
			if depth == 0 {
				return j
			}
			depth--
		}
	}
	return -1
}

// stringStartBack returns the offset of the quote that opens the string
// literal closed at end, or -1.
func stringStartBack(data []byte, end, stop int) int {
	q := data[end]
	for j := end - 1; j >= stop; j-- {
		if data[j] != q {
			continue
		}
		slashes := 0
		for k := j - 1; k >= stop && data[k] == '\\'; k-- {
			slashes++
		}
		if slashes%2 == 0 {
			return j
		}
	}
	return -1
}

// keyPattern is a property key: a name or a quoted string, then a colon.
var keyPattern = regexp.MustCompile(`^(?:([A-Za-z_$][\w$]*)|"([^"\\]*)"|'([^'\\]*)')\s*:`)

// objectFields lists the top-level properties of the object literal whose
// `{` is at start (nil when it does not close within maxObject).
func objectFields(data []byte, start int) []schemaField {
	end := min(len(data), start+maxObject)
	var fields []schemaField
	depth := 0
	valueAt := -1 // where the current property's value starts
	closeValue := func(at int) {
		if valueAt >= 0 && len(fields) > 0 {
			fields[len(fields)-1].value = bytes.TrimSpace(data[valueAt:at])
		}
		valueAt = -1
	}
	expectKey := false
	for i := start; i < end; i++ {
		c := data[i]
		switch {
		case c == '"' || c == '\'':
			i = skipString(data, i, end)
			if i < 0 {
				return nil
			}
			continue
		case c == '`':
			i = skipTemplate(data, i, end)
			if i < 0 {
				return nil
			}
			continue
		case c == '/' && regexAllowed(data, start, i):
			i = skipRegexp(data, i, end)
			if i < 0 {
				return nil
			}
			continue
		case c == '{' || c == '(' || c == '[':
			depth++
			if depth == 1 {
				expectKey = true
			}
			continue
		case c == '}' || c == ')' || c == ']':
			depth--
			if depth == 0 {
				closeValue(i)
				return fields
			}
			continue
		}
		if depth != 1 {
			continue
		}
		if c == ',' {
			closeValue(i)
			expectKey = true
			continue
		}
		if !expectKey || c == ' ' || c == '\n' || c == '\t' || c == '\r' {
			continue
		}
		expectKey = false
		if bytes.HasPrefix(data[i:], []byte("...")) {
			fields = append(fields, schemaField{spread: true})
			valueAt = i + 3
			continue
		}
		m := keyPattern.FindSubmatchIndex(data[i:min(end, i+200)])
		if m == nil {
			continue // a shorthand property or not an object literal
		}
		var key string
		for g := 1; g <= 3; g++ {
			if m[2*g] >= 0 {
				key = string(data[i+m[2*g] : i+m[2*g+1]])
			}
		}
		fields = append(fields, schemaField{key: key})
		valueAt = i + m[1]
		i += m[1] - 1
	}
	return nil
}

// skipString returns the offset of the quote closing the string literal
// opened at i, or -1.
func skipString(data []byte, i, end int) int {
	q := data[i]
	for j := i + 1; j < end; j++ {
		switch data[j] {
		case '\\':
			j++
		case q:
			return j
		case '\n':
			if q != '`' {
				return -1
			}
		}
	}
	return -1
}

// skipTemplate returns the offset of the backtick closing the template
// literal opened at i, substitutions (`${…}`, which may hold strings and
// templates of their own) included, or -1.
func skipTemplate(data []byte, i, end int) int {
	for j := i + 1; j < end; j++ {
		switch data[j] {
		case '\\':
			j++
		case '`':
			return j
		case '$':
			if j+1 < end && data[j+1] == '{' {
				j = skipCode(data, j+1, end)
				if j < 0 {
					return -1
				}
			}
		}
	}
	return -1
}

// skipCode returns the offset of the `}` closing the brace at i, strings
// and templates inside skipped, or -1.
func skipCode(data []byte, i, end int) int {
	depth := 0
	for j := i; j < end; j++ {
		switch data[j] {
		case '"', '\'':
			if j = skipString(data, j, end); j < 0 {
				return -1
			}
		case '`':
			if j = skipTemplate(data, j, end); j < 0 {
				return -1
			}
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// regexAllowed reports whether a `/` at i starts a regular expression
// literal: after an operator or an opening bracket, not after a value.
func regexAllowed(data []byte, start, i int) bool {
	for j := i - 1; j >= start; j-- {
		switch c := data[j]; c {
		case ' ', '\n', '\t', '\r':
			continue
		case '(', ',', '=', ':', '[', '!', '&', '|', '?', '{', '}', ';':
			return true
		default:
			return false
		}
	}
	return true
}

// skipRegexp returns the offset of the `/` closing the regular expression
// literal opened at i (character classes may hold a `/`), or -1.
func skipRegexp(data []byte, i, end int) int {
	class := false
	for j := i + 1; j < end; j++ {
		switch data[j] {
		case '\\':
			j++
		case '[':
			class = true
		case ']':
			class = false
		case '/':
			if !class {
				return j
			}
		case '\n':
			return -1
		}
	}
	return -1
}

// keyNames are the keys of fields, spreads left out.
func keyNames(fields []schemaField) []string {
	var keys []string
	for _, f := range fields {
		if !f.spread {
			keys = append(keys, f.key)
		}
	}
	return keys
}

// objectsWithKey finds the object literals that have key as a top-level
// key and that keep says are the document sought; each object once.
func objectsWithKey(data []byte, key string, keep func([]schemaField) bool) [][]schemaField {
	anchor := []byte(key + ":")
	seen := map[int]bool{}
	var found [][]schemaField
	for off := 0; ; {
		i := bytes.Index(data[off:], anchor)
		if i < 0 {
			return found
		}
		i += off
		off = i + len(anchor)
		if i == 0 || (data[i-1] != '{' && data[i-1] != ',') {
			continue // part of a longer name, or not a key
		}
		start := enclosingObject(data, i)
		if start < 0 || seen[start] {
			continue
		}
		seen[start] = true
		if fields := objectFields(data, start); fields != nil && keep(fields) {
			found = append(found, fields)
		}
	}
}

// hasKeys reports whether fields have every key of keys.
func hasKeys(fields []schemaField, keys ...string) bool {
	names := keyNames(fields)
	for _, k := range keys {
		if !slices.Contains(names, k) {
			return false
		}
	}
	return true
}

// fieldNamed returns the field named key.
func fieldNamed(fields []schemaField, key string) (schemaField, bool) {
	for _, f := range fields {
		if !f.spread && f.key == key {
			return f, true
		}
	}
	return schemaField{}, false
}

// stringLiterals are the double-quoted strings in src (a short value such
// as `E("sse").optional()` or `F(["http","streamable-http"])`).
var stringLiterals = regexp.MustCompile(`"([^"\\]*)"`)

// literals returns the strings src names.
func literals(src []byte) []string {
	var out []string
	for _, m := range stringLiterals.FindAllSubmatch(src, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

// cliSchema is what the extractor found of the CLI's documents in one
// binary: the keys of each (the union over every copy of its schema).
type cliSchema struct {
	settings, permissions, agent []string
	// transports are the fields of the MCP server entries by their type
	// ("stdio" for the entry without one).
	transports map[string][]string
	// unresolved are spreads (`...X(e)`) whose keys were not found, by
	// document.
	unresolved []string
}

// extractSchema reads the documents' schemas out of a CLI binary:
//   - settings: the object with the keys $schema and apiKeyHelper, with
//     the settings of the CLI's feature registry (the objects with
//     buildGate and shape: what shape returns) where a spread calls it;
//   - permissions: the object with allow, deny and additionalDirectories,
//     with the registry's permissionsShape;
//   - agent: the object with prompt and mcpServers;
//   - MCP server entries: the objects with type, alwaysLoad (which a hook
//     of type http or command lacks), and url or command, whose type is a
//     schema of literals (E("sse"), H.literal("sse"),
//     F(["http","streamable-http"])), by those literals.
func extractSchema(data []byte) cliSchema {
	s := cliSchema{transports: map[string][]string{}}
	registry := map[string][]string{}
	for _, entry := range objectsWithKey(data, "buildGate", func(f []schemaField) bool { return hasKeys(f, "shape") }) {
		for _, key := range []string{"shape", "permissionsShape"} {
			if f, ok := fieldNamed(entry, key); ok {
				registry[key] = append(registry[key], s.keysIn(data, "registry "+key, f.value, nil, 0)...)
			}
		}
	}
	union := func(doc string, dst *[]string, objs [][]schemaField) {
		for _, fields := range objs {
			for _, k := range s.keysOf(data, doc, fields, registry, 0) {
				if !slices.Contains(*dst, k) {
					*dst = append(*dst, k)
				}
			}
		}
		slices.Sort(*dst)
	}
	union("settings", &s.settings, objectsWithKey(data, "apiKeyHelper", func(f []schemaField) bool { return hasKeys(f, "$schema", "apiKeyHelper") }))
	union("permissions", &s.permissions, objectsWithKey(data, "additionalDirectories", func(f []schemaField) bool {
		return hasKeys(f, "allow", "deny", "additionalDirectories")
	}))
	union("agent", &s.agent, objectsWithKey(data, "mcpServers", func(f []schemaField) bool { return hasKeys(f, "prompt", "mcpServers") }))
	entries := objectsWithKey(data, "type", func(f []schemaField) bool {
		return (hasKeys(f, "url") || hasKeys(f, "command")) && hasKeys(f, "alwaysLoad") && len(transportTypes(f)) > 0
	})
	for _, fields := range entries {
		for _, typ := range transportTypes(fields) {
			keys := s.transports[typ]
			union("mcpServers "+typ, &keys, [][]schemaField{fields})
			s.transports[typ] = keys
		}
	}
	return s
}

// transportName is what an MCP transport's type looks like (a literal of
// its schema's describe text does not).
var transportName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// transportTypes are the types an MCP entry schema's type field accepts:
// the literals of a schema call (`E("sse")`, `H.literal("sse")`,
// `F(["http","streamable-http"])`, `E("stdio").optional()`); none for an
// object built at run time (`type:"sse"`).
func transportTypes(fields []schemaField) []string {
	f, ok := fieldNamed(fields, "type")
	if !ok || len(f.value) > 200 {
		return nil
	}
	paren, quote := bytes.IndexByte(f.value, '('), bytes.IndexByte(f.value, '"')
	if paren < 0 || quote < paren {
		return nil
	}
	var types []string
	for _, l := range literals(f.value) {
		if transportName.MatchString(l) {
			types = append(types, l)
		}
	}
	return types
}

// keysOf are the keys of fields, those of the spreads it can follow
// included: object literals (`...{…}`, `...c&&{…}`), calls of a function
// that returns one (`...Ho()`), calls of the feature registry's shapes
// (keys from registry); nothing (`...!1`). A spread it cannot follow is
// noted in s.unresolved.
func (s *cliSchema) keysOf(data []byte, doc string, fields []schemaField, registry map[string][]string, depth int) []string {
	keys := keyNames(fields)
	for _, f := range fields {
		if f.spread {
			keys = append(keys, s.spreadKeys(data, doc, f.value, registry, depth)...)
		}
	}
	return keys
}

// spreadCall is a spread of a call without arguments (`...Ho()`).
var spreadCall = regexp.MustCompile(`^([A-Za-z_$][\w$]*)\(\)$`)

// calledNames are the names of the functions a spread calls.
var calledNames = regexp.MustCompile(`([A-Za-z_$][\w$]*)\(`)

// spreadKeys are the keys a spread (its expression src) adds.
func (s *cliSchema) spreadKeys(data []byte, doc string, src []byte, registry map[string][]string, depth int) []string {
	switch string(src) {
	case "!0", "!1", "{}", "void 0", "null":
		return nil
	}
	if bytes.IndexByte(src, '{') >= 0 && depth < 4 {
		return s.keysIn(data, doc, src, registry, depth+1)
	}
	if m := spreadCall.FindSubmatch(src); m != nil && depth < 4 {
		def := []byte("function " + string(m[1]) + "(){return{")
		var keys []string
		found := false
		for off := 0; ; {
			i := bytes.Index(data[off:], def)
			if i < 0 {
				break
			}
			off = off + i + len(def)
			if obj := objectFields(data, off-1); obj != nil {
				found = true
				keys = append(keys, s.keysOf(data, doc, obj, registry, depth+1)...)
			}
		}
		if found {
			return keys
		}
	}
	for _, m := range calledNames.FindAllSubmatch(src, -1) {
		for _, body := range functionBodies(data, string(m[1])) {
			for _, key := range []string{"permissionsShape", "shape"} {
				called := bytes.Contains(body, []byte("."+key+"(")) || bytes.Contains(body, []byte("."+key+"?.("))
				if called && len(registry[key]) > 0 {
					return registry[key]
				}
			}
		}
	}
	s.unresolved = append(s.unresolved, doc+": ..."+string(src))
	return nil
}

// keysIn are the keys of the object literals at the top level of src (a
// spread's or an arrow function's expression), with their spreads.
func (s *cliSchema) keysIn(data []byte, doc string, src []byte, registry map[string][]string, depth int) []string {
	var keys []string
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '"', '\'':
			if i = skipString(src, i, len(src)); i < 0 {
				return keys
			}
		case '`':
			if i = skipTemplate(src, i, len(src)); i < 0 {
				return keys
			}
		case '{':
			fields := objectFields(src, i)
			if fields == nil {
				return keys
			}
			keys = append(keys, s.keysOf(data, doc, fields, registry, depth)...)
			if i = skipCode(src, i, len(src)); i < 0 {
				return keys
			}
		}
	}
	return keys
}

// functionBodies are the bodies of the functions declared as name:
// minified names are not unique across the bundle's modules.
func functionBodies(data []byte, name string) [][]byte {
	decl := []byte("function " + name + "(")
	var bodies [][]byte
	for off := 0; ; {
		i := bytes.Index(data[off:], decl)
		if i < 0 {
			return bodies
		}
		off += i + len(decl)
		open := bytes.Index(data[off:min(len(data), off+200)], []byte("){"))
		if open < 0 {
			continue
		}
		start := off + open + 1
		if end := skipCode(data, start, min(len(data), start+maxObject)); end > 0 {
			bodies = append(bodies, data[start:end+1])
		}
	}
}
