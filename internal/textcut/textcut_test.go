package textcut

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 4, "hell…"},
		{"hello", 0, "…"},
		{"héllo", 2, "h…"}, // é is two bytes: not split
		{"héllo", 3, "hé…"},
		{"日本語", 4, "日…"},
		{"日本語", 6, "日本…"},
		{"", 0, ""},
	} {
		if got := Cut(tc.s, tc.n); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// TestPrefixNeverSplits: every cut of a text mixing 1- to 4-byte
// characters is valid UTF-8 and as long as it can be.
func TestPrefixNeverSplits(t *testing.T) {
	s := strings.Repeat("aé日🙂", 20)
	for n := 0; n <= len(s); n++ {
		p := Prefix(s, n)
		if !utf8.ValidString(p) || len(p) > n || !strings.HasPrefix(s, p) {
			t.Fatalf("Prefix(_, %d) = %q", n, p)
		}
		if n < len(s) {
			_, size := utf8.DecodeRuneInString(s[len(p):])
			if len(p)+size <= n {
				t.Fatalf("Prefix(_, %d) = %d bytes; another character fits", n, len(p))
			}
		}
	}
}
