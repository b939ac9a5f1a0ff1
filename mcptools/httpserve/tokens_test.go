package httpserve

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit"
)

// Tests of the tokens file.

// TestTokensFile: an empty tokens file is no user (not an error); user
// names that would point --per-user-config-dir at itself or its parent are
// an error naming the file and the line; Reload reports who was removed,
// and a file that fails to parse leaves the tokens as they were.
func TestTokensFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, content := range []string{"", "# nobody yet\n\n"} {
		write(content)
		tokens, err := LoadTokens(file, "")
		if err != nil {
			t.Errorf("tokens file %q: %v", content, err)
			continue
		}
		if n := tokens.Users(); n != 0 {
			t.Errorf("tokens file %q: %d users", content, n)
		}
		if _, err := tokens.verify(context.Background(), "anything", nil); err == nil {
			t.Errorf("tokens file %q lets a token in", content)
		}
	}
	for _, name := range []string{".", "..", "a/b", `a\b`, "../x", "x/..", "/", `\`, ""} {
		write("# users\nok:" + testkit.TokenHash("ok") + "\n" + name + ":" + testkit.TokenHash("t") + "\n")
		_, err := LoadTokens(file, "")
		if err == nil || !strings.Contains(err.Error(), file+" line 3") {
			t.Errorf("user name %q: %v; want an error naming %s line 3", name, err, file)
		}
	}

	testkit.WriteTokens(t, file, "alice", "bob", "carol")
	tokens, err := LoadTokens(file, "single-token")
	if err != nil {
		t.Fatal(err)
	}
	if n := tokens.Users(); n != 4 {
		t.Errorf("%d users, want alice, bob, carol and default", n)
	}
	testkit.WriteTokens(t, file, "bob")
	if removed, err := tokens.Reload(); err != nil || !slices.Equal(removed, []string{"alice", "carol"}) {
		t.Errorf("Reload without alice and carol: removed %v, %v", removed, err)
	}
	write("bob:" + testkit.TokenHash("bob-secret") + "\nbob:not-a-hash\n")
	if removed, err := tokens.Reload(); err == nil || removed != nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("Reload of a broken file: removed %v, %v", removed, err)
	}
	if !tokens.Has("bob") || !tokens.Has("default") || tokens.Users() != 2 {
		t.Errorf("a broken file changed the tokens")
	}
	write("")
	if removed, err := tokens.Reload(); err != nil || !slices.Equal(removed, []string{"bob"}) {
		t.Errorf("Reload of an empty file: removed %v, %v", removed, err)
	}
	if tokens.Users() != 1 || !tokens.Has("default") {
		t.Errorf("the single token is gone with the file's")
	}
}
