// Package jsonenc encodes JSON as json.Marshal does, without escaping
// HTML: the one such encoder of the project (the CLI's arguments, agent
// files, the stdio transport's frames).
package jsonenc

import (
	"bytes"
	"encoding/json"
)

// Marshal is json.Marshal without HTML escaping: <, > and & stay as they
// are (the CLI and MCP clients read the same; a human reads a prompt's
// "<example>" in a process's arguments).
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
