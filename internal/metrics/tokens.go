package metrics

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"sync"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/tokensfile"
)

// Tokens are the bearer tokens that may read the metrics on the --http
// listener (--metrics-tokens-file): the file holds one SHA-256 of a token
// in hex per line (never the token), or NAME:SHA256HEX as --tokens-file
// does (the name is the operator's note); blank lines and lines starting
// with # are skipped. A metrics token opens nothing but the metrics, and
// the tokens of --tokens-file do not open the metrics. Reload reads the
// file again (on SIGHUP).
type Tokens struct {
	path string

	mu     sync.RWMutex
	hashes [][sha256.Size]byte
}

// LoadTokens reads the tokens file at path.
func LoadTokens(path string) (*Tokens, error) {
	t := &Tokens{path: path}
	if err := t.Reload(); err != nil {
		return nil, err
	}
	return t, nil
}

// Reload reads the tokens file again; on an error the tokens stay as they
// were. A line is never quoted in an error (it might hold a token by
// mistake).
func (t *Tokens) Reload() error {
	tokens, err := tokensfile.Read(t.path, "--metrics-tokens-file", false, nil)
	if err != nil {
		return err
	}
	hashes := make([][sha256.Size]byte, len(tokens))
	for i, tok := range tokens {
		hashes[i] = tok.Hash
	}
	t.mu.Lock()
	t.hashes = hashes
	t.mu.Unlock()
	return nil
}

// Len is how many tokens there are.
func (t *Tokens) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.hashes)
}

// allows reports whether token is one of the tokens.
func (t *Tokens) allows(token string) bool {
	sum := sha256.Sum256([]byte(token))
	t.mu.RLock()
	defer t.mu.RUnlock()
	ok := 0
	for _, h := range t.hashes {
		ok |= subtle.ConstantTimeCompare(sum[:], h[:])
	}
	return token != "" && ok == 1
}

// Protect serves h to requests with one of the tokens as their bearer
// token (Authorization: Bearer TOKEN), and 401 to the others.
func (t *Tokens) Protect(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || !t.allows(strings.TrimSpace(token)) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			http.Error(w, "the metrics need a bearer token of --metrics-tokens-file", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
