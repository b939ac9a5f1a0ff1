// Package textcut shortens text for people and for size caps without ever
// splitting a UTF-8 character: the one truncation the server uses.
package textcut

import "unicode/utf8"

// Prefix returns the longest prefix of s of at most n bytes that ends on a
// character boundary.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Cut returns s cut to at most n bytes of its text followed by "…" when it
// was cut.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Prefix(s, n) + "…"
}
