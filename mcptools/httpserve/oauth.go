package httpserve

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// The OAuth resource-server mode (--oauth-issuer): a bearer token that is
// a JWT is verified against the issuer's discovery document and key set
// (go-oidc and go-jose do the parsing and the signatures; nothing here is
// cryptography): an asymmetric signature by a key of the issuer (alg none
// and HMAC are refused), iss the issuer, aud this server, exp and nbf
// within a small leeway. The user is a claim of the token; its scopes may
// narrow --http-allow (OAuthOptions.ScopeClasses). A token that is not a
// JWT goes to the tokens file.

// OAuthLeeway is the clock skew allowed on a token's exp and nbf.
const OAuthLeeway = 30 * time.Second

// keysMinRefresh is the shortest time between two fetches of the
// issuer's keys: a token signed by no known key (a rotation, or a forgery)
// fetches them again, at most this often, so that bad tokens cannot make
// the server flood the issuer.
const keysMinRefresh = 10 * time.Second

// maxOAuthDocBytes caps the discovery document and the key set.
const maxOAuthDocBytes = 1 << 20

// signingAlgs are the JWS algorithms a token may use: asymmetric ones only.
// An HMAC key would be a secret shared with the issuer, and "none" no
// signature at all.
var signingAlgs = []string{oidc.RS256, oidc.RS384, oidc.RS512, oidc.PS256, oidc.PS384, oidc.PS512,
	oidc.ES256, oidc.ES384, oidc.ES512, oidc.EdDSA}

// OAuthOptions configure the OAuth resource-server mode.
type OAuthOptions struct {
	// Issuer is the authorization server's issuer URL (--oauth-issuer):
	// its discovery document is Issuer/.well-known/openid-configuration,
	// which must name the same issuer, and a token's iss must be it.
	Issuer string
	// Audiences are this server's names (its public URL and the /mcp
	// resource): a token's aud must hold one of them.
	Audiences []string
	// UserClaim names the claim whose value is the user (default "sub");
	// it must be a user name as the tokens file has them.
	UserClaim string
	// ScopeClasses maps each scope to the --http-allow classes it grants,
	// all within --http-allow (the caller checks that): a token's
	// sessions may use the classes of its scopes only. nil: every token
	// has all of --http-allow, as the tokens file's users do.
	ScopeClasses map[string][]string
	// Client fetches the discovery document and the keys (nil: one with
	// a 10 s timeout).
	Client *http.Client
}

// OAuth verifies the JWT bearer tokens of one issuer.
type OAuth struct {
	o        OAuthOptions
	verifier *oidc.IDTokenVerifier
	now      func() time.Time
}

// NewOAuth reads the issuer's discovery document and its key set; either
// failing is an error (the server does not start without them).
func NewOAuth(ctx context.Context, o OAuthOptions) (*OAuth, error) {
	if o.UserClaim == "" {
		o.UserClaim = "sub"
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if err := CheckIssuerURL(o.Issuer); err != nil {
		return nil, err
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, o.Client), o.Issuer)
	if err != nil {
		return nil, fmt.Errorf("reading the discovery document of --oauth-issuer %s: %w", o.Issuer, err)
	}
	var doc struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := p.Claims(&doc); err != nil {
		return nil, fmt.Errorf("reading the discovery document of --oauth-issuer %s: %w", o.Issuer, err)
	}
	if err := secureURL(doc.JWKSURI); err != nil {
		return nil, fmt.Errorf("the discovery document of --oauth-issuer %s has jwks_uri %q: %w", o.Issuer, doc.JWKSURI, err)
	}
	keys := &keySet{url: doc.JWKSURI, client: o.Client}
	if err := keys.fetch(ctx); err != nil {
		return nil, fmt.Errorf("reading the keys of --oauth-issuer %s: %w", o.Issuer, err)
	}
	// The issuer, audience and times are checked in verify (go-oidc's own
	// checks are those of ID tokens).
	v := oidc.NewVerifier(o.Issuer, keys, &oidc.Config{SkipClientIDCheck: true, SkipExpiryCheck: true, SkipIssuerCheck: true,
		SupportedSigningAlgs: signingAlgs})
	return &OAuth{o: o, verifier: v, now: time.Now}, nil
}

// CheckIssuerURL checks an issuer URL: https, or http on a loopback host
// (the keys must not travel where they can be replaced).
func CheckIssuerURL(issuer string) error {
	if err := secureURL(issuer); err != nil {
		return fmt.Errorf("invalid --oauth-issuer %q: %w", issuer, err)
	}
	return nil
}

// secureURL accepts an https URL, or an http one on a loopback host.
func secureURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errors.New("use an absolute URL such as https://auth.example.com")
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && (host == "localhost" || ip != nil && ip.IsLoopback()):
		return nil
	}
	return errors.New("use https (plain http only on a loopback host)")
}

// Issuer is the issuer's URL.
func (a *OAuth) Issuer() string { return a.o.Issuer }

// Scopes are the scopes that grant classes, sorted (none without
// ScopeClasses).
func (a *OAuth) Scopes() []string {
	var s []string
	for k := range a.o.ScopeClasses {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// oauthExtra marks, in auth.TokenInfo.Extra, a user who came with a JWT:
// the tokens file does not name them, so their requests are not refused
// as revoked (a JWT stands until it expires).
const oauthExtra = "claude-agent-mcp.oauth"

// fromOAuth reports whether info is that of a JWT.
func fromOAuth(info *auth.TokenInfo) bool {
	b, _ := info.Extra[oauthExtra].(bool)
	return b
}

// claims are the claims of a token that verify reads besides go-oidc's.
type claims struct {
	Audience  audience        `json:"aud"`
	NotBefore *json.Number    `json:"nbf"`
	Scope     string          `json:"scope"`
	Scp       json.RawMessage `json:"scp"` // a list (or a string) in some issuers' tokens
}

// audience is aud: one string or a list.
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*a = []string{one}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return errors.New("aud is neither a string nor a list of strings")
	}
	*a = list
	return nil
}

// verify checks a JWT and returns its user, scopes, expiry and grant; the
// error (ErrInvalidToken) says what was wrong.
func (a *OAuth) verify(ctx context.Context, token string) (*auth.TokenInfo, error) {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", auth.ErrInvalidToken, fmt.Sprintf(format, args...))
	}
	t, err := a.verifier.Verify(ctx, token)
	if err != nil {
		return nil, invalid("not a JWT signed by a key of %s with an asymmetric algorithm (%v)", a.o.Issuer, err)
	}
	if t.Issuer != a.o.Issuer {
		return nil, invalid("issued by %q, not by %s", t.Issuer, a.o.Issuer)
	}
	var c claims
	if err := t.Claims(&c); err != nil {
		return nil, invalid("reading its claims: %v", err)
	}
	if !slices.ContainsFunc(c.Audience, func(aud string) bool { return slices.Contains(a.o.Audiences, aud) }) {
		return nil, invalid("its audience %q is not this server (%s)", []string(c.Audience), strings.Join(a.o.Audiences, " or "))
	}
	now := a.now()
	if t.Expiry.IsZero() {
		return nil, invalid("it has no expiry (exp)")
	}
	if now.After(t.Expiry.Add(OAuthLeeway)) {
		return nil, invalid("expired at %s", t.Expiry.UTC().Format(time.RFC3339))
	}
	if c.NotBefore != nil {
		nbf, err := c.NotBefore.Float64()
		if err != nil {
			return nil, invalid("nbf is not a number")
		}
		if at := time.Unix(int64(nbf), 0); now.Add(OAuthLeeway).Before(at) {
			return nil, invalid("not valid before %s", at.UTC().Format(time.RFC3339))
		}
	}
	user, err := a.user(t)
	if err != nil {
		return nil, invalid("%v", err)
	}
	info := &auth.TokenInfo{UserID: user, Scopes: c.scopes(), Expiration: t.Expiry, Extra: map[string]any{oauthExtra: true}}
	if a.o.ScopeClasses != nil {
		info.Extra[sessions.GrantKey] = a.grant(info.Scopes)
	}
	return info, nil
}

// user is the value of the user claim, which must be a user name.
func (a *OAuth) user(t *oidc.IDToken) (string, error) {
	var all map[string]any
	if err := t.Claims(&all); err != nil {
		return "", err
	}
	v, ok := all[a.o.UserClaim].(string)
	if !ok {
		return "", fmt.Errorf("it has no string claim %q, which names the user (--oauth-user-claim)", a.o.UserClaim)
	}
	if !validUser(v) {
		return "", fmt.Errorf(`its claim %q is not a user name: 1 to 64 letters, digits, '.', '_', '@' or '-', and not "." or ".." (choose another claim with --oauth-user-claim)`, a.o.UserClaim)
	}
	return v, nil
}

// scopes are the token's scopes: scope (space-separated) or scp.
func (c *claims) scopes() []string {
	s := strings.Fields(c.Scope)
	var list []string
	var one string
	switch {
	case json.Unmarshal(c.Scp, &list) == nil:
		s = append(s, list...)
	case json.Unmarshal(c.Scp, &one) == nil:
		s = append(s, strings.Fields(one)...)
	}
	slices.Sort(s)
	return slices.Compact(s)
}

// grant is the classes the scopes grant, sorted; empty (not nil) when none.
func (a *OAuth) grant(scopes []string) []string {
	g := []string{}
	for _, s := range scopes {
		g = append(g, a.o.ScopeClasses[s]...)
	}
	slices.Sort(g)
	return slices.Compact(g)
}

// looksLikeJWT reports whether token has the form of a JWS: three
// base64url parts, the first a JSON object naming an algorithm. Any other
// token is one of the tokens file's.
func looksLikeJWT(token string) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return false
	}
	head, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return false
	}
	var h struct {
		Alg *string `json:"alg"`
	}
	return json.Unmarshal(head, &h) == nil && h.Alg != nil
}

// keySet is the issuer's public keys (oidc.KeySet), fetched from its
// jwks_uri at start and again when a token is signed by none of them — at
// most every keysMinRefresh.
type keySet struct {
	url    string
	client *http.Client

	fetching sync.Mutex // held while fetching

	mu      sync.Mutex // guards keys and fetched
	keys    oidc.StaticKeySet
	fetched time.Time // the start of the last fetch
}

// VerifySignature returns the payload of jwt once a key of the set
// verifies its signature (the algorithm was checked by the verifier).
func (k *keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	k.mu.Lock()
	keys, fetched := k.keys, k.fetched
	k.mu.Unlock()
	if payload, err := keys.VerifySignature(ctx, jwt); err == nil {
		return payload, nil
	}
	if time.Since(fetched) < keysMinRefresh {
		return nil, errors.New("no key of the issuer verifies its signature")
	}
	if err := k.refresh(ctx, fetched); err != nil {
		return nil, fmt.Errorf("no key of the issuer verifies its signature, and fetching its keys again failed: %w", err)
	}
	k.mu.Lock()
	keys = k.keys
	k.mu.Unlock()
	if payload, err := keys.VerifySignature(ctx, jwt); err == nil {
		return payload, nil
	}
	return nil, errors.New("no key of the issuer verifies its signature")
}

// refresh fetches the keys unless another call did since seen.
func (k *keySet) refresh(ctx context.Context, seen time.Time) error {
	k.fetching.Lock()
	defer k.fetching.Unlock()
	k.mu.Lock()
	again := k.fetched.Equal(seen)
	k.mu.Unlock()
	if !again {
		return nil
	}
	return k.fetch(ctx)
}

// fetch reads the key set from its URL: its public signing keys (RSA,
// EC, Ed25519), others skipped. A failure keeps the keys as they were,
// and counts as a fetch for keysMinRefresh. Calls are one at a time
// (fetching, or before the set is shared).
func (k *keySet) fetch(ctx context.Context) error {
	k.mu.Lock()
	k.fetched = time.Now()
	k.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return err
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxOAuthDocBytes+1))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", k.url, resp.Status)
	}
	if len(body) > maxOAuthDocBytes {
		return fmt.Errorf("%s is over %d bytes", k.url, maxOAuthDocBytes)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return fmt.Errorf("%s is no JSON key set: %w", k.url, err)
	}
	var keys oidc.StaticKeySet
	for _, raw := range set.Keys {
		var jwk jose.JSONWebKey
		if json.Unmarshal(raw, &jwk) != nil || (jwk.Use != "" && jwk.Use != "sig") {
			continue // a key type go-jose does not know, or one for encryption
		}
		if pub := jwk.Public(); pub.Key != nil {
			keys.PublicKeys = append(keys.PublicKeys, pub.Key)
		}
	}
	if len(keys.PublicKeys) == 0 {
		return fmt.Errorf("%s holds no public signing key", k.url)
	}
	k.mu.Lock()
	k.keys = keys
	k.mu.Unlock()
	return nil
}
