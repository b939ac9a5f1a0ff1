// stateSigner signs the requestState of input-required results
// (multi-round-trip calls, protocol 2026-07-28): the client echoes it
// with its retry, and only a state this server issued since its start is
// taken back. The key is random and lives as long as the server.

package mcptools

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// stateSigner signs and checks request states with a key of its own.
type stateSigner struct{ key []byte }

// newStateSigner returns a stateSigner with a fresh random key.
func newStateSigner() *stateSigner {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return &stateSigner{key: k}
}

// Sign is s with its signature, as the client is to echo it.
func (sg *stateSigner) Sign(s string) string {
	mac := hmac.New(sha256.New, sg.key)
	mac.Write([]byte(s))
	return base64.RawURLEncoding.EncodeToString([]byte(s)) + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// Verify returns the state token carries, or an error saying why it is
// not one this stateSigner issued.
func (sg *stateSigner) Verify(token string) (string, error) {
	body, sig, ok := strings.Cut(token, ".")
	raw, err1 := base64.RawURLEncoding.DecodeString(body)
	got, err2 := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err1 != nil || err2 != nil {
		return "", errors.New("invalid requestState: it must be echoed unchanged from this server's input-required result")
	}
	mac := hmac.New(sha256.New, sg.key)
	mac.Write(raw)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return "", errors.New("invalid requestState: it was not issued by this server (or the server restarted)")
	}
	return string(raw), nil
}
