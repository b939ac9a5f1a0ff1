package fakecli

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"regexp"
)

// replaceToolResult makes the tool_result blocks of a user line errors with
// text.
func replaceToolResult(line []byte, text string) []byte {
	line = editBlocks(line, func(b *object) {
		var typ string
		_ = json.Unmarshal(b.get("type"), &typ)
		if typ == "tool_result" {
			b.set("content", text)
			b.set("is_error", true)
		}
	})
	o := mustObject(line)
	if o.has("tool_use_result") {
		o.set("tool_use_result", "Error: "+text)
	}
	return o.bytes()
}

// replaceText sets the text of the text blocks of an assistant or user line.
func replaceText(line []byte, text string) []byte {
	return editBlocks(line, func(b *object) {
		var typ string
		_ = json.Unmarshal(b.get("type"), &typ)
		if typ == "text" {
			b.set("text", text)
		}
	})
}

// jsonString is s escaped for use inside a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

var nonAlnum = regexp.MustCompile(`[^A-Za-z0-9]`)

func slug(p string) string { return nonAlnum.ReplaceAllString(p, "-") }

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
