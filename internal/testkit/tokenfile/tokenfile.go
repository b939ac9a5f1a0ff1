// Package tokenfile writes the --tokens-file of tests: users with their
// tokens' SHA-256, as the server reads them.
package tokenfile

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// Hash is the SHA-256 (hex) of a token, as the tokens file lists it.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Write writes a tokens file naming users, each with the token
// "<user>-secret".
func Write(t testing.TB, file string, users ...string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# users\n")
	for _, u := range users {
		b.WriteString(u + ":" + Hash(u+"-secret") + "\n")
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}
