package httpserve

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/tokensfile"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Tokens are the bearer tokens that may call the server, each naming its
// user. The file holds one "USER:SHA256HEX" line per token (the hex is the
// SHA-256 of the token: the file never holds a token); Reload reads it
// again (on SIGHUP). A file without tokens is valid: no one may call.
type Tokens struct {
	path   string
	single string // the SHA-256 of CLAUDE_AGENT_MCP_TOKEN, user "default"

	mu     sync.RWMutex
	byHash map[string]string // hex → user
	users  map[string]bool
}

var (
	// A user name is a directory under --per-user-config-dir: "." and ".."
	// are refused besides the characters, and so is any separator.
	tokenUserRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._@-]{1,64}$`) })
)

// validUser reports whether u may name a user: it names a directory
// under --per-user-config-dir.
func validUser(u string) bool { return tokenUserRE().MatchString(u) && u != "." && u != ".." }

// LoadTokens reads the tokens file (path "" for none) and adds the single
// token (raw; "" for none) as user "default". No token at all is no error:
// every request is then refused (see Users).
func LoadTokens(path, single string) (*Tokens, error) {
	t := &Tokens{path: path}
	if single != "" {
		sum := sha256.Sum256([]byte(single))
		t.single = hex.EncodeToString(sum[:])
	}
	if _, err := t.Reload(); err != nil {
		return nil, err
	}
	return t, nil
}

// Reload reads the tokens file again and returns the users who had a token
// and have none now, sorted. On an error the tokens stay as they were. A
// line is never quoted in an error (it might hold a token by mistake).
func (t *Tokens) Reload() (removed []string, err error) {
	byHash := map[string]string{}
	if t.single != "" {
		byHash[t.single] = "default"
	}
	if t.path != "" {
		tokens, err := tokensfile.Read(t.path, "--tokens-file", true, func(u string) (bool, string) {
			return validUser(u), `the user name must be 1 to 64 letters, digits, '.', '_', '@' or '-', and not "." or ".." (it names a directory under --per-user-config-dir)`
		})
		if err != nil {
			return nil, err
		}
		for _, tok := range tokens {
			byHash[tok.HexHash()] = tok.Name
		}
	}
	users := map[string]bool{}
	for _, u := range byHash {
		users[u] = true
	}
	t.mu.Lock()
	for u := range t.users {
		if !users[u] {
			removed = append(removed, u)
		}
	}
	t.byHash, t.users = byHash, users
	t.mu.Unlock()
	slices.Sort(removed)
	return removed, nil
}

// Users returns how many users have tokens.
func (t *Tokens) Users() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.users)
}

// Has reports whether user has a token now.
func (t *Tokens) Has(user string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.users[user]
}

// verify is the bearer token verifier: the token's hash must be listed; the
// user it names becomes the request's.
func (t *Tokens) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	sum := sha256.Sum256([]byte(token))
	got := []byte(hex.EncodeToString(sum[:]))
	t.mu.RLock()
	defer t.mu.RUnlock()
	user := ""
	for h, u := range t.byHash {
		if subtle.ConstantTimeCompare(got, []byte(h)) == 1 {
			user = u
		}
	}
	if user == "" {
		return nil, fmt.Errorf("%w: unknown token", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: user, Expiration: time.Now().Add(time.Hour)}, nil
}

// hasHash reports whether the token whose SHA-256 (hex) is hash still
// names user (a dashboard sign-in made with it stands while it does).
func (t *Tokens) hasHash(hash, user string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return hash != "" && t.byHash[hash] == user
}
