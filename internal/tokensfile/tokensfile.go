// Package tokensfile reads the server's files of bearer tokens
// (--tokens-file, --metrics-tokens-file): one token a line, given by the
// SHA-256 of the token in hex (never the token), as NAME:SHA256HEX or,
// where names are optional, SHA256HEX alone; blank lines and lines
// starting with # are skipped. An error names the file and the line's
// number, never its text (it might hold a token by mistake).
package tokensfile

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
)

// Token is one line of a tokens file: the name it gives ("" when none)
// and the SHA-256 of the token.
type Token struct {
	Name string
	Hash [sha256.Size]byte
}

// HexHash is the token's hash in lower-case hex.
func (t Token) HexHash() string { return hex.EncodeToString(t.Hash[:]) }

// Read reads the tokens file at path; flag names it in errors
// (--tokens-file). With named, every line must give a name that valid
// accepts (valid says what a name may be when it refuses one); without,
// the name is optional and never checked.
func Read(path, flag string, named bool, valid func(string) (ok bool, rule string)) ([]Token, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", flag, err)
	}
	defer f.Close()
	want := "the SHA-256 of a token in hex (64 hex digits), or NAME:SHA256HEX"
	if named {
		want = "USER:SHA256HEX (the SHA-256 of the token, 64 hex digits; never the token itself)"
	}
	var out []Token
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var t Token
		hash := line
		if i := strings.LastIndexByte(line, ':'); i >= 0 {
			t.Name, hash = line[:i], line[i+1:]
		}
		b, err := hex.DecodeString(hash)
		if err != nil || len(b) != sha256.Size || named && t.Name == "" {
			return nil, fmt.Errorf("%s %s line %d: want %s", flag, path, n, want)
		}
		copy(t.Hash[:], b)
		if named && valid != nil {
			if ok, rule := valid(t.Name); !ok {
				return nil, fmt.Errorf("%s %s line %d: %s", flag, path, n, rule)
			}
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", flag, err)
	}
	return out, nil
}
