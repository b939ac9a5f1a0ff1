package metrics

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/promtext"
)

func hashOf(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func writeTokens(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTokensProtect: the metrics answer a bearer token whose SHA-256 the
// file holds (alone or as NAME:HASH), 401 with WWW-Authenticate to
// anything else; a reload takes a token away, a bad file keeps the tokens.
func TestTokensProtect(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "metrics-tokens")
	writeTokens(t, path, "# scrapers", "", hashOf("scrape-a"), "prometheus:"+hashOf("scrape-b"))
	tokens, err := LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := tokens.Len(); n != 2 {
		t.Fatalf("Len = %d, want 2", n)
	}
	m := New()
	m.Watch(fakeSource)
	srv := httptest.NewServer(tokens.Protect(m.Handler()))
	defer srv.Close()
	status := func(auth string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("a 401 without a Bearer WWW-Authenticate: %q", resp.Header.Get("WWW-Authenticate"))
		}
		return resp.StatusCode
	}
	for _, c := range []struct {
		auth string
		want int
	}{
		{"", http.StatusUnauthorized},
		{"Bearer ", http.StatusUnauthorized},
		{"Bearer wrong", http.StatusUnauthorized},
		{"Basic scrape-a", http.StatusUnauthorized},
		{"Bearer " + hashOf("scrape-a"), http.StatusUnauthorized}, // the hash is not the token
		{"Bearer scrape-a", http.StatusOK},
		{"bearer scrape-b", http.StatusOK},
	} {
		if got := status(c.auth); got != c.want {
			t.Errorf("Authorization %q: %d, want %d", c.auth, got, c.want)
		}
	}
	if f := promtext.Scrape(t, srv.Client(), srv.URL, "scrape-a"); len(f) == 0 {
		t.Error("an authorized scrape holds no metric")
	}

	writeTokens(t, path, hashOf("scrape-b"))
	if err := tokens.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := status("Bearer scrape-a"); got != http.StatusUnauthorized {
		t.Errorf("a token removed by the reload: %d, want 401", got)
	}
	writeTokens(t, path, "prometheus:scrape-b") // a token, not its hash
	err = tokens.Reload()
	if err == nil || !strings.Contains(err.Error(), "line 1") || strings.Contains(err.Error(), "scrape-b") {
		t.Errorf("a line with a token instead of its hash: %v; want an error naming the line, never quoting it", err)
	}
	if got := status("Bearer scrape-b"); got != http.StatusOK {
		t.Errorf("after a failed reload: %d, want the tokens as they were (200)", got)
	}
	if _, err := LoadTokens(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing tokens file loaded")
	}
}
