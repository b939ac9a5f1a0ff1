package fakecli

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/jsonstr"
)

// object is a JSON object that keeps its key order, so that edited lines
// look like the CLI's (type first, and so on).
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

func parseObject(b []byte) (*object, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	o := &object{vals: map[string]json.RawMessage{}}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		if _, dup := o.vals[k]; !dup {
			o.keys = append(o.keys, k)
		}
		o.vals[k] = v
	}
	return o, nil
}

// mustObject parses b, or returns an empty object.
func mustObject(b []byte) *object {
	o, err := parseObject(b)
	if err != nil {
		return &object{vals: map[string]json.RawMessage{}}
	}
	return o
}

func (o *object) has(k string) bool { _, ok := o.vals[k]; return ok }

func (o *object) get(k string) json.RawMessage { return o.vals[k] }

// set sets k to v (marshalled unless it is a json.RawMessage or *object),
// keeping k's position or appending it.
func (o *object) set(k string, v any) {
	var raw json.RawMessage
	switch v := v.(type) {
	case json.RawMessage:
		raw = v
	case *object:
		raw = v.bytes()
	default:
		raw = marshal(v)
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = raw
}

func (o *object) bytes() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(marshal(k))
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// marshal encodes v without HTML escaping.
func marshal(v any) []byte {
	b, _ := jsonstr.Marshal(v)
	return b
}

// editBlocks calls edit on every content block of line's message.content
// (when it is a list) and returns the edited line.
func editBlocks(line []byte, edit func(block *object)) []byte {
	o := mustObject(line)
	msg := mustObject(o.get("message"))
	var blocks []json.RawMessage
	if json.Unmarshal(msg.get("content"), &blocks) != nil {
		return line
	}
	for i, raw := range blocks {
		b := mustObject(raw)
		edit(b)
		blocks[i] = b.bytes()
	}
	msg.set("content", blocks)
	o.set("message", msg)
	return o.bytes()
}
