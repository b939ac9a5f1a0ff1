package tokensfile

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const h = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" // sha256("test")

// TestRead: names, bare hashes, comments and blank lines; an error names
// the line by its number and never quotes it.
func TestRead(t *testing.T) {
	tokens, err := Read(write(t, "# users\n\nalice:"+h+"\n"+strings.ToUpper(h)+"\n"), "--metrics-tokens-file", false, nil)
	if err != nil || len(tokens) != 2 || tokens[0].Name != "alice" || tokens[1].Name != "" || tokens[0].Hash != sha256.Sum256([]byte("test")) || tokens[1].HexHash() != h {
		t.Fatalf("Read = %+v, %v", tokens, err)
	}
	valid := func(n string) (bool, string) { return n != "..", "not .." }
	for _, c := range []struct {
		text, want string
		named      bool
	}{
		{"secret-token-in-clear\n", "line 1: want the SHA-256", false},
		{"# c\n" + h + "\n", "line 2: want USER:SHA256HEX", true},
		{"..:" + h + "\n", "line 1: not ..", true},
		{"bob:" + h[:60] + "\n", "line 1: want USER", true},
	} {
		_, err := Read(write(t, c.text), "--tokens-file", c.named, valid)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), strings.TrimSpace(c.text)) {
			t.Errorf("Read(%q, named %v) = %v; want an error with %q that does not quote the line", c.text, c.named, err, c.want)
		}
	}
	if _, err := Read(filepath.Join(t.TempDir(), "none"), "--tokens-file", true, nil); err == nil || !strings.Contains(err.Error(), "reading --tokens-file") {
		t.Errorf("a missing file: %v", err)
	}
}
