package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// stdUnquote is encoding/json's reading of the string at the front of b:
// its value and the index of its closing quote.
func stdUnquote(b []byte) (s string, end int, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	s, ok = tok.(string)
	if err != nil || !ok || len(b) == 0 || b[0] != '"' {
		return "", 0, false
	}
	return s, int(dec.InputOffset()) - 1, true
}

var cases = []string{
	``, `"`, `""`, `"abc"`, `"abc"tail`, `"abc`, `x"abc"`, ` "abc"`,
	`"a\nb\tc\rd\be\ff\/g\\h\"i"`, `"\x"`, `"\`, `"\"`, `"a\u00e9b"`, `"\u00E9\u00e9"`,
	`"\u12"`, `"\u12G4"`, `"\u0000"`, "\"\x00\"", "\"\x1f\"", "\"\x7f\"",
	`"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ude00\ud83d"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`,
	`"\ud83d\u12"`, `"\ud83d\uZZZZ"`, `"\ud83d\`, `"\ud83d\u"`,
	"\"café ☃ 😀\"", "\"a\xffb\"", "\"\xed\xa0\x80\"", "\"\xe2\x98\"", "\"\xef\xbf\xbd\"", "\"\xc3\"",
	`"}},"` + `"`, `"a"b"`,
}

// TestUnquote holds Unquote to encoding/json on strings chosen for their
// escapes, surrogates, invalid bytes and ends.
func TestUnquote(t *testing.T) {
	long := `"` + strings.Repeat(`line of text, "quoted" \u00e9 é\n`, 4000) + `"`
	for _, c := range append(cases, long, long[:len(long)-1]) {
		s, end, ok := Unquote([]byte(c))
		ws, wend, wok := stdUnquote([]byte(c))
		if s != ws || end != wend || ok != wok {
			t.Errorf("Unquote(%.60q) = %.40q, %d, %v; encoding/json %.40q, %d, %v", c, s, end, ok, ws, wend, wok)
		}
	}
	// Each byte class at each place of the eight-byte blocks plainRun reads.
	for _, special := range []string{`"`, `\n`, `\u00e9`, "\x01", "\x1f", "\x7f", "\xff", "é", "\xe2\x98"} {
		for p := range 20 {
			c := `"` + strings.Repeat("a", p) + special + strings.Repeat("b", 19-p) + `"`
			s, end, ok := Unquote([]byte(c))
			ws, wend, wok := stdUnquote([]byte(c))
			if s != ws || end != wend || ok != wok {
				t.Errorf("Unquote(%q) = %q, %d, %v; encoding/json %q, %d, %v", c, s, end, ok, ws, wend, wok)
			}
		}
	}
	if s, _, _ := Unquote([]byte(`"\ud83d\ude00 \ud83d!"`)); s != "😀 \uFFFD!" {
		t.Errorf("a pair and a lone half: %q", s)
	}
}

// FuzzUnquote: any bytes after a quote read as encoding/json reads them.
func FuzzUnquote(f *testing.F) {
	for _, c := range cases {
		f.Add([]byte(strings.TrimPrefix(c, `"`)))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in := append([]byte{'"'}, body...)
		s, end, ok := Unquote(in)
		ws, wend, wok := stdUnquote(in)
		if s != ws || end != wend || ok != wok {
			t.Fatalf("Unquote(%q) = %q, %d, %v; encoding/json %q, %d, %v", in, s, end, ok, ws, wend, wok)
		}
	})
}

func benchmark(b *testing.B, unit string, dec func([]byte) string) {
	in := []byte(`"` + strings.Repeat(unit, 65536/len(unit)) + `"`)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		dec(in)
	}
}

func ours(b []byte) string { s, _, _ := Unquote(b); return s }
func std(b []byte) string  { var s string; _ = json.Unmarshal(b, &s); return s }

// A line of prose and a newline; the same with a non-ASCII letter; plain
// ASCII (the fake API's BIGTEXT).
const (
	prose      = `The quick brown fox jumps over the lazy dog, then \"naps\".\n`
	accented   = `Le cœur a ses raisons que la raison ne connaît point.\n`
	plainASCII = `abcdefghij`
)

func BenchmarkUnquoteProse(b *testing.B)    { benchmark(b, prose, ours) }
func BenchmarkUnquoteAccented(b *testing.B) { benchmark(b, accented, ours) }
func BenchmarkUnquoteASCII(b *testing.B)    { benchmark(b, plainASCII, ours) }
func BenchmarkStdlibProse(b *testing.B)     { benchmark(b, prose, std) }
func BenchmarkStdlibAccented(b *testing.B)  { benchmark(b, accented, std) }

// quoteCases are strings for AppendQuote: every escape, invalid bytes,
// the two line separators JSON leaves alone and encoding/json escapes.
var quoteCases = []string{
	"", "plain", `"q" \b/`, "\b\f\n\r\t\x00\x01\x1f\x7f", "<a & b>", "café ☃ 😀",
	"a\xffb", "\xed\xa0\x80", "\xe2\x98", "\u2028\u2029", "\xef\xbf\xbd",
	strings.Repeat("line of text, \"quoted\" é\n", 100),
}

// TestAppendQuote: Marshal's bytes (json.Encoder without HTML escaping).
func TestAppendQuote(t *testing.T) {
	for _, s := range quoteCases {
		checkQuote(t, s)
	}
}

func checkQuote(t *testing.T, s string) {
	t.Helper()
	want, err := Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := AppendQuote([]byte("x"), s); string(got) != "x"+string(want) {
		t.Fatalf("AppendQuote(%q) = %s, want x%s", s, got, want)
	}
}

// FuzzAppendQuote: any string quoted as Marshal quotes it.
func FuzzAppendQuote(f *testing.F) {
	for _, s := range quoteCases {
		f.Add(s)
	}
	f.Fuzz(checkQuote)
}

func BenchmarkAppendQuoteProse(b *testing.B) {
	s := strings.Repeat("The quick brown fox jumps over the lazy dog, then \"naps\".\n", 65536/59)
	b.SetBytes(int64(len(s)))
	buf := make([]byte, 0, 2*len(s))
	for b.Loop() {
		buf = AppendQuote(buf[:0], s)
	}
}

func BenchmarkMarshalProse(b *testing.B) {
	s := strings.Repeat("The quick brown fox jumps over the lazy dog, then \"naps\".\n", 65536/59)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		_, _ = json.Marshal(s)
	}
}

// TestMarshal: json.Marshal's bytes, but for <, > and &, and no newline.
func TestMarshal(t *testing.T) {
	got, err := Marshal(map[string]any{"p": "<example> a & b", "n": 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"n":1,"p":"<example> a & b"}`; string(got) != want {
		t.Errorf("Marshal = %s, want %s", got, want)
	}
	if _, err := Marshal(func() {}); err == nil {
		t.Error("Marshal of a func: no error")
	}
	std, _ := json.Marshal([]string{"plain"})
	if got, _ := Marshal([]string{"plain"}); string(got) != string(std) {
		t.Errorf("Marshal = %s, json.Marshal = %s", got, std)
	}
}
