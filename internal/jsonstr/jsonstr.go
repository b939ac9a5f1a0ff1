// Package jsonstr is the project's JSON text without HTML escaping:
// Marshal (json.Marshal leaving <, > and & as they are: the CLI's
// arguments, agent files, the stdio transport's frames), and one string
// decoded as encoding/json does and encoded as Marshal does, several times
// as fast: the text of a streamed answer (a text delta, tens of KiB with a
// newline every line) went through encoding/json and segmentio's decoder
// at about 90 MB/s, both slow on escapes.
package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/segmentio/asm/ascii"
)

// plain marks the bytes that stand for themselves in a JSON string: not
// the quote, the backslash, a control character, nor the start of a
// multi-byte character (those are checked as UTF-8).
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// plainRun is the index of the first byte from i on that is not plain
// (len(b) when there is none), eight bytes at a time.
func plainRun[T ~string | ~[]byte](b T, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		c := b[i : i+8]
		w := uint64(c[0]) | uint64(c[1])<<8 | uint64(c[2])<<16 | uint64(c[3])<<24 |
			uint64(c[4])<<32 | uint64(c[5])<<40 | uint64(c[6])<<48 | uint64(c[7])<<56
		q, bs := w^('"'*ones), w^('\\'*ones)
		// A byte at or above 0x80, below 0x20, or equal to the quote or
		// the backslash sets its high bit here (the standard zero-byte
		// tests; a borrow can mark a byte after a real match, never one
		// before it, and the scan below finds the first).
		if (w|(w-0x20*ones)|((q-ones)&^q)|((bs-ones)&^bs))&highs != 0 {
			break
		}
	}
	for i < len(b) && plain[b[i]] {
		i++
	}
	return i
}

// Unquote decodes the JSON string whose opening quote is b[0]: its value,
// as encoding/json gives it (an invalid UTF-8 byte or a lone surrogate
// becomes U+FFFD), and the index in b of its closing quote. ok is false
// when b does not start with a valid JSON string.
func Unquote(b []byte) (s string, end int, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", 0, false
	}
	// Most strings are printable ASCII without an escape: the closing
	// quote is found, and the bytes before it checked, a vector at a time.
	if q := bytes.IndexByte(b[1:], '"') + 1; q > 0 && bytes.IndexByte(b[1:q], '\\') < 0 && ascii.ValidPrint(b[1:q]) {
		return string(b[1:q]), q, true
	}
	// Otherwise the bytes that stand for themselves (plain ASCII and valid
	// UTF-8) are copied a run at a time, from, up to the next escape or
	// invalid byte; out is needed only when there is one.
	var out strings.Builder
	from := 1
	for i := 1; i < len(b); {
		c := b[i]
		switch {
		case plain[c]:
			i = plainRun(b, i+1)
			continue
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(b[i:])
			if r != utf8.RuneError || size > 1 {
				i += size
				continue
			}
		case c == '"':
			if from == 1 { // no escape nor invalid byte: b as it is
				return string(b[1:i]), i, true
			}
			out.Write(b[from:i])
			return out.String(), i, true
		case c < 0x20:
			return "", 0, false
		}
		if out.Cap() == 0 {
			out.Grow(len(b) - 1)
		}
		out.Write(b[from:i])
		if c == '\\' {
			n, ok := unescape(&out, b[i:])
			if !ok {
				return "", 0, false
			}
			i += n
		} else { // an invalid byte
			out.WriteRune(utf8.RuneError)
			i++
		}
		from = i
	}
	return "", 0, false // no closing quote
}

// unescape writes the character of the escape at the front of b (its
// backslash is b[0]) and says how many bytes it took.
func unescape(out *strings.Builder, b []byte) (n int, ok bool) {
	if len(b) < 2 {
		return 0, false
	}
	switch b[1] {
	case '"', '\\', '/':
		out.WriteByte(b[1])
	case 'b':
		out.WriteByte('\b')
	case 'f':
		out.WriteByte('\f')
	case 'n':
		out.WriteByte('\n')
	case 'r':
		out.WriteByte('\r')
	case 't':
		out.WriteByte('\t')
	case 'u':
		r := hex4(b[2:])
		if r < 0 {
			return 0, false
		}
		n = 6
		if utf16.IsSurrogate(r) {
			// A pair only when the next escape completes it; otherwise
			// the half alone is U+FFFD and the next is read on its own.
			hi := r
			r = utf8.RuneError
			if len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
				if lo := hex4(b[8:]); lo >= 0 {
					if dec := utf16.DecodeRune(hi, lo); dec != utf8.RuneError {
						r, n = dec, 12
					}
				}
			}
		}
		out.WriteRune(r)
		return n, true
	default:
		return 0, false
	}
	return 2, true
}

// hex4 is the value of the four hex digits at the front of b, or -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// AppendQuote appends s to dst as a JSON string, the bytes
// json.Encoder gives with SetEscapeHTML(false) (Marshal): the quote, the
// backslash and control characters escaped, an invalid UTF-8 byte as
// \ufffd, U+2028 and U+2029 as escapes, the rest as it is, copied a run
// at a time.
func AppendQuote(dst []byte, s string) []byte {
	dst = append(dst, '"')
	from := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plain[c] {
				i = plainRun(s, i+1)
				continue
			}
			dst = append(dst, s[from:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			from = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[from:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			from = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[from:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			from = i
			continue
		}
		i += size
	}
	dst = append(dst, s[from:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

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
